"""`unbag run PLAN`: models x benchmarks x protocols from a TOML plan, resumable cell by cell
(the format and the reuse rule for users: docs/plans.md).

A plan names its models (specs, or `[train.NAME]` tables trained first), benchmarks and protocols:

    out = "runs/main"
    explain = ["ood-color-0000"]   # optional: items drawn under the first SGI protocol (ctrl's: 5)
    [models]
    pretrained = "builtin"
    FT = "builtin:ft"
    [train.clic-mine]            # trained into OUT/train/clic-mine, then usable as a model
    method = "clic"
    model = "builtin"
    steps = 600
    [benchmarks]
    ctrl = "ctrl"
    retrieval = "ctrl-retrieval"
    [protocols]
    global = "global"
    SGI = "sgi"
    TFLocal = "head:builtin:tflocal"   # the shipped head trained on this cell's model
    SGI-paper = { protocol = "sgi:paper", models = ["pretrained"] }   # only for these models
    SGI-1view = { protocol = "sgi", phases = 1 }   # a protocol with options

Each cell writes OUT/results/MODEL__BENCH__PROTOCOL.json atomically; a rerun skips finished
cells made with the same model spec and weights, protocol and options (as recorded), benchmark
spec, seed and files, so an interrupted run continues where it stopped and a cell whose setup
changed runs again. Retrieval sets are scored with the
global protocol only (other protocols score candidate pairs); those cells are skipped, as are
zero-shot classification cells for protocols other than global. When the plan scores a
benchmark that names items to explain (ctrl) with an SGI protocol, OUT/explain/ gets SGI
explanation images of a few of its items (the first model, the first SGI protocol), which
`unbag report OUT` links.
"""
from __future__ import annotations

import json
import re
import shutil
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import benchmarks
from .errors import UnbagError
from .protocols import SGI_PRESETS, resolve
from .utils import atomic_write, check_out, write_json

KEEP_LOADED = 3  # benchmarks held in memory at once by a plan run
PLAN_KEYS = frozenset({"out", "seed", "per_category", "precision", "explain", "models", "train", "benchmarks",
                       "protocols"})


def read_plan(path: str | Path) -> dict:
    """Parse and check a plan file; errors name the file and the field."""
    path = Path(path)
    try:
        plan = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UnbagError(f"{path}: plan file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise UnbagError(f"{path}: not valid TOML ({e})") from None
    unknown = sorted(set(plan) - PLAN_KEYS)
    if unknown:
        raise UnbagError(f"{path}: unknown field '{unknown[0]}'; a plan has {', '.join(sorted(PLAN_KEYS))} "
                         "(docs/plans.md)")
    for field in ("benchmarks", "protocols"):
        if not isinstance(plan.get(field), dict) or not plan[field]:
            raise UnbagError(f"{path}: field '{field}' must be a table of NAME = \"SPEC\"")
    if not plan.get("models") and not plan.get("train"):
        raise UnbagError(f"{path}: needs a [models] table or [train.NAME] tables")
    for name, value in plan["protocols"].items():
        if isinstance(value, dict) and not isinstance(value.get("protocol"), str):
            raise UnbagError(f"{path}: protocols.{name}: a table needs protocol = \"NAME\" (and its options)")
        if not isinstance(value, (str, dict)):
            raise UnbagError(f"{path}: protocols.{name}: a protocol spec string or a table")
        only = value.get("models") if isinstance(value, dict) else None
        known = list(plan.get("models", {})) + list(plan.get("train", {}))
        if only is not None and not (isinstance(only, list) and only and set(only) <= set(known)):
            raise UnbagError(f"{path}: protocols.{name}.models: a list of the plan's model names "
                             f"({', '.join(known)}), got {only!r}")
    from .scoring.encode import PRECISIONS
    if plan.get("precision", "auto") not in PRECISIONS:
        raise UnbagError(f"{path}: field 'precision' must be one of {', '.join(PRECISIONS)}, "
                         f"got {plan['precision']!r}")
    n = plan.get("per_category")
    if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        raise UnbagError(f"{path}: field 'per_category' must be a whole number >= 1, got {n!r}")
    explain = plan.get("explain", [])
    if not (isinstance(explain, list) and all(isinstance(x, str) for x in explain)):
        raise UnbagError(f"{path}: field 'explain' must be a list of item ids, e.g. [\"ood-color-0000\"]")
    for name in list(plan.get("models", {})) + list(plan.get("benchmarks")) + list(plan.get("protocols")):
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise UnbagError(f"{path}: name {name!r} may only use letters, digits and _ . + -")
    return plan


def run_plan(path: str | Path, out: str | None = None, progress: bool = True, device: str = "cpu") -> list[dict]:
    """Run every unfinished cell of a plan; return all cells' results."""
    from .cache import JobCache
    from .evaluation import evaluate
    from .models import load
    from .models.base import weights_id

    plan = read_plan(path)
    root = Path(out or plan.get("out", "runs/plan"))
    root.mkdir(parents=True, exist_ok=True)
    atomic_write(root / "plan.toml", Path(path).read_text())
    model_specs = dict(plan.get("models", {}))
    for name, table in plan.get("train", {}).items():
        model_specs[name] = str(train_entry(name, table, root, progress, device))
    seed = int(plan.get("seed", 0))
    # items per category and split of the generated benchmarks that take a number (ctrl)
    sizes = {spec: plan.get("per_category") if benchmarks.sized(spec) else None
             for spec in plan["benchmarks"].values()}
    precision = str(plan.get("precision", "auto"))
    protocols = {p: (v, {}) if isinstance(v, str) else
                 (v["protocol"], {k: x for k, x in v.items() if k not in ("protocol", "models")})
                 for p, v in plan["protocols"].items()}
    only = {p: v["models"] for p, v in plan["protocols"].items() if isinstance(v, dict) and "models" in v}
    cells = [(m, b, p) for m in model_specs for b in plan["benchmarks"] for p in plan["protocols"]
             if not (benchmarks.kind(plan["benchmarks"][b]).global_only and protocols[p] != ("global", {}))
             and m in only.get(p, [m])]
    results, loaded, ids, backend = [], {}, {}, None
    cache = JobCache()  # the cells share regions and frozen features; dropped when the plan ends
    files = {spec: benchmarks.files_fingerprint(spec) for spec in set(plan["benchmarks"].values())}
    cols = [TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} cells"),
            TextColumn("{task.fields[cell]}"), TimeElapsedColumn()]
    with Progress(*cols, disable=not progress) as bar:
        task = bar.add_task("plan", total=len(cells), cell="")
        for m, b, p in cells:
            dest = root / "results" / f"{m}__{b}__{p}.json"
            bar.update(task, cell=f"{m} · {b} · {p}")
            protocol, options = protocols[p]
            protocol = resolve(protocol, model_specs[m])
            res = json.loads(dest.read_text()) if dest.is_file() else None
            if backend is None or backend.spec != model_specs[m]:  # cells come model by model
                backend = load(model_specs[m], device=device)
            if res is not None and model_specs[m] not in ids:  # which weights the spec means now
                ids[model_specs[m]] = weights_id(backend)
            spec = plan["benchmarks"][b]
            if res is None or not _same_setup(res, model_specs[m], ids.get(model_specs[m]), protocol, options,
                                              spec, seed, files[spec], _precision(backend, precision), sizes[spec]):
                if spec not in loaded:  # generate/read each benchmark once per run; keep the last
                    while len(loaded) >= KEEP_LOADED:  # few (a model's cells alternate between them)
                        loaded.pop(next(iter(loaded)))
                    loaded[spec] = benchmarks.load(spec, seed=seed, per_category=sizes[spec])
                res = evaluate(backend, loaded[spec], protocol=protocol, out=str(dest), seed=seed,
                               progress=False, options=options, precision=precision, cache=cache)
            res["cell"] = {"model": m, "benchmark": b, "protocol": p, "file": str(dest.relative_to(root))}
            results.append(res)
            bar.advance(task)
    write_json(root / "summary.json", {"plan": str(path), "cells": [r["cell"] for r in results]})
    sgi = next((protocols[p] for p in plan["protocols"] if protocols[p][0] in SGI_PRESETS), None)
    bench = next((spec for spec in plan["benchmarks"].values() if benchmarks.kind(spec).explain), None)
    items = plan.get("explain", benchmarks.kind(bench).explain if bench else ())
    if items and sgi and bench:
        write_explanations(root, model_specs[next(iter(model_specs))], bench, items, seed, *sgi, device=device)
    return results


def write_explanations(root: Path, model: str, bench: str, items: list[str], seed: int, protocol: str,
                       options: dict, device: str = "cpu") -> Path:
    """ROOT/explain/ITEM.png for a few items of `bench` under a plan's first SGI protocol and first
    model, with ROOT/explain/index.json (file, caption) for the report; existing files are kept."""
    from .models import load
    from .sgi.explain import explain
    from .sgi.config import SGIConfig

    out = root / "explain"
    out.mkdir(exist_ok=True)
    cfg = SGIConfig.from_options({**SGI_PRESETS[protocol], **options})
    setup = json.loads(json.dumps({"model": model, "bench": bench, "seed": seed, "protocol": protocol,
                                   "options": cfg.record()}))
    old = {e["file"]: e for e in json.loads((out / "index.json").read_text())} if (out / "index.json").is_file() else {}
    backend, index = None, []
    for item in items:
        name = f"{item}.png"
        if not ((out / name).is_file() and old.get(name, {}).get("setup") == setup):  # redraw when the setup changed
            backend = backend or load(model, device=device)
            explain(backend, benchmarks.load_item(bench, item, seed), cfg).save(out / name)
        index.append({"file": name, "setup": setup, "caption": f"{protocol} on {item} ({model}): each caption "
                      "segment's chosen region and its cosine"})
    write_json(out / "index.json", index)
    return out


def _precision(backend, precision: str) -> str:
    """The precision `evaluate` will record for `backend` under the plan's `precision`."""
    from .scoring.encode import precision_of
    before, backend.precision = backend.precision, precision
    try:
        return precision_of(backend)
    finally:
        backend.precision = before


def _same_setup(res: dict, model: str, model_id: str | None, protocol: str, options: dict, bench: str,
                seed: int, files: str | None, precision: str = "fp32", per_category: int | None = None) -> bool:
    """Whether a finished cell was made by this model spec, with the same weights, and protocol with
    the options it would record now (new shipped weights or a changed default, e.g. of SGI, make
    the cell run again instead of being reused), on the same benchmark spec, seed and files
    (`files_fingerprint`), in the same precision, and on the same pixels and items where unbag
    generates them (`per_category`: the plan's, None for the default)."""
    recorded_bench = res.get("benchmark", {})
    if recorded_bench.get("spec") != bench or res.get("seed") != seed or recorded_bench.get("files") != files:
        return False
    if res.get("config", {}).get("precision") != precision:
        return False
    if any(recorded_bench.get(k) != v for k, v in benchmarks.stamp(bench, per_category).items()):
        return False  # made by another renderer, at another size or on other items
    from .protocols import build

    recorded = json.loads(json.dumps(build(protocol, options, bench)[1]))  # tuples -> lists, as stored
    return (res.get("model") == model and res.get("model_id") == model_id
            and res.get("config", {}).get("protocol") == protocol
            and res.get("config", {}).get("options") == recorded)


def train_entry(name: str, table: dict, root: Path, progress: bool, device: str) -> Path:
    """Train a [train.NAME] model once (resuming an interrupted run); its model folder."""
    from .training.engine import TrainConfig, Trainer, config_diff

    out = root / "train" / name
    opts = dict(table)
    method = opts.pop("method", "clip")
    try:
        cfg = TrainConfig.for_method(method, device=device, **opts)
    except UnbagError as e:
        raise UnbagError(f"train.{name}: {e}") from None
    saved = _trained_config(out)
    if saved is not None and config_diff(saved, cfg):  # the plan changed: train again
        check_out(out, "train")  # only a folder unbag's trainer wrote is replaced
        shutil.rmtree(out)
    elif (out / "model" / "open_clip_config.json").is_file():
        return out / "model"
    Trainer(cfg, out).fit(resume=(out / "ckpt" / "trainer.pt").is_file(), progress=progress)
    return out / "model"


def _trained_config(out: Path) -> dict | None:
    """The training config a run folder was made with (its checkpoint's, else its export's)."""
    for f in (out / "ckpt" / "train_config.json", out / "config.json"):
        if f.is_file():
            data = json.loads(f.read_text())
            return data.get("config", data) if f.name == "config.json" else data
    return None


def print_matrix(results: list[dict]) -> None:
    """The matrix of each grid (ctrl's: rows = model x protocol; columns = group score per
    category, ID/OOD, and retrieval R@1), then one table per other benchmark, as each declares
    (benchmarks.Summary)."""
    from .reports.table import print_grids, print_summaries

    cells = [(r["cell"]["model"], r["cell"]["protocol"], r, None) for r in results]
    print_grids(cells)
    print_summaries(cells)

