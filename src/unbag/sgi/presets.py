"""SGI's protocols: `sgi` (unbag's SGI) and `sgi:paper` (the recipe of arXiv 2604.11496), as
presets of SGIConfig's options, registered in `unbag.protocols`."""
from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Callable

from ..scoring import Protocol
from .config import SGIConfig, sgi_defaults
from .protocol import score_sgi

if TYPE_CHECKING:
    from ..benchmarks.base import Benchmark

# option values on top of SGIConfig's defaults (unbag's SGI). `sgi:paper`: crops of a sliding grid
# plus the full image, every segment against every region, one view per region, each segment's
# best cosine averaged, no structure checks.
SGI_PRESETS: dict[str, dict] = {
    "sgi": {},
    "sgi:paper": {"regions": "grid", "mode": "crop", "match": "all", "phases": 1, "assign": "max",
                  "relations": "cosine", "counts": "off", "mix": 0.0},
}


def config_for(preset: str, options: dict, bench: "str | Benchmark") -> SGIConfig:
    """The SGI configuration a preset scores `bench` with: the benchmark's declared defaults (what
    its images call for: photos `selective`, the 3D ctrl `objects`), then the preset's, then the
    user's `options`. Scoring and explanations both take it from here."""
    options = {k: v for k, v in options.items() if v is not None}
    return SGIConfig.from_options({**sgi_defaults(bench), **SGI_PRESETS[preset], **options})


def _sgi(preset: str) -> Callable[[str, dict, str], tuple[Callable, dict]]:
    def build(arg: str, options: dict, bench: "str | Benchmark") -> tuple[Callable, dict]:
        declared = sgi_defaults(bench)  # what the benchmark's images call for (photos: `selective`)
        if declared and str(options.get("regions", "")).startswith("blobs"):
            name = bench if isinstance(bench, str) else bench.name
            warnings.warn(f"SGI regions {options['regions']!r} on {name}: blobs are found against a plain "
                          f"background and find few objects on photos or in 3D scenes; this benchmark's default "
                          f"is {declared['regions']!r} (docs/sgi.md)", stacklevel=3)
        cfg = config_for(preset, options, bench)
        record = cfg.record()
        if declared and preset == "sgi":
            record["benchmark_defaults"] = declared
        return functools.partial(score_sgi, cfg=cfg), record
    return build


PROTOCOLS: dict[str, Protocol] = {
    "sgi": Protocol("sgi (unbag's SGI)", _sgi("sgi"), options=True, cached=True, recipe="unbag"),
    "sgi:paper": Protocol("sgi:paper (the paper's SGI recipe)", _sgi("sgi:paper"), options=True, cached=True,
                          recipe="paper"),
}
