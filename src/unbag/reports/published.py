"""Published numbers of named models (reports/published/*.toml): what a report shows as a labelled
"published" row beside a user's own result of the same model, with the difference and whether the
published number falls inside the result's 95% interval (reproduced or not)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent / "published"


@dataclass(frozen=True)
class Published:
    """One benchmark's published numbers of one model."""
    source: str
    kind: str  # official (the benchmark's own paper or code) | third-party
    metrics: dict[str, float]


@functools.lru_cache(maxsize=None)
def _tables() -> tuple[tuple[tuple[str, ...], dict[str, Published]], ...]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    out = []
    for f in sorted(HERE.glob("*.toml")):
        data = tomllib.loads(f.read_text())
        models = tuple(data.pop("models"))
        out.append((models, {b: Published(v["source"], v["kind"], dict(v["metrics"])) for b, v in data.items()}))
    return tuple(out)


def published(model_spec: str, benchmark: str) -> Published | None:
    """The published numbers of the model a spec names on a benchmark (by its registered name), if
    any: a table of its own (reports/published/*.toml), else vl_compo's row of that checkpoint
    (third-party, every subset it measured: reports/vl_compo.py)."""
    from .vl_compo import SOURCE, checkpoint, published_metrics

    for models, by_bench in _tables():
        if model_spec in models and benchmark in by_bench:
            return by_bench[benchmark]
    row = checkpoint(model_spec)
    metrics = published_metrics(row).get(benchmark) if row is not None else None
    return Published(f"{SOURCE}, row {row.name}", "third-party", metrics) if metrics else None


def reproduced(value: float, interval: list[float] | None, pub: float) -> str:
    """The difference ours - published in points, and whether the published number lies inside our
    95% interval: "+0.4, inside" (no interval recorded: the difference alone)."""
    d = f"{100 * (value - pub):+.1f}"
    if not interval:
        return d
    return f"{d}, {'inside' if interval[0] <= pub <= interval[1] else 'outside'}"
