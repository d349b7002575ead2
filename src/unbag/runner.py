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

Each cell writes OUT/results/MODEL__BENCH__PROTOCOL.json atomically (a name holding `__`, or
starting or ending with `_`, has its underscores written %5F, so no two cells share a file), and
records its cell (model, benchmark, protocol names) inside; a rerun skips finished cells made
with the same model spec, weights and configuration, protocol and options (as recorded),
benchmark spec, seed and files, so an interrupted run continues where it stopped and a cell
whose setup changed runs again. OUT/summary.json lists the cells of the plan run last (a report
shows those). Retrieval sets are scored with the
global protocol only (other protocols score candidate pairs); those cells are skipped, as are
zero-shot classification cells for protocols other than global. When the plan scores a
benchmark that names items to explain (ctrl) with an SGI protocol, OUT/explain/ gets SGI
explanation images of a few of its items (the first model, the first SGI protocol), which
`unbag report OUT` links.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from . import benchmarks, dist
from .errors import UnbagError, warn
from .protocols import SGI_PRESETS, resolve
from .utils import at_least, atomic_write, check_out, guard_inputs, mark, read_json, read_toml, write_json

KEEP_LOADED = 3  # benchmarks held in memory at once by a plan run
PLAN_KEYS = frozenset({"out", "seed", "per_category", "precision", "explain", "models", "train", "benchmarks",
                       "protocols", "images_outside_root", "published"})
RUN_FILES = ("plan.toml", "summary.json", "results", "explain", "train", "report")  # a plan's folder (the demo's report)


def cell_file(model: str, bench: str, protocol: str) -> str:
    """The results file of a cell, unique by construction: the names joined by `__`, each with its
    underscores written %5F when it holds `__` or starts or ends with `_` (names have no `%`)."""
    def part(name: str) -> str:
        return name.replace("_", "%5F") if "__" in name or name.startswith("_") or name.endswith("_") else name
    return f"{part(model)}__{part(bench)}__{part(protocol)}.json"


def read_plan(path: str | Path) -> dict:
    """Parse and check a plan file; errors name the file and the field."""
    path = Path(path)
    plan = read_toml(path, "plan file not found")
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
    for x in explain:  # each names a file in OUT/explain/: no path may lead out of it
        if not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*", x):
            raise UnbagError(f"{path}: explain item {x!r}: an item id of letters, digits and _ . + - (it names "
                             "the explanation's file)")
    for field in ("models", "train"):
        if not isinstance(plan.get(field, {}), dict):
            raise UnbagError(f"{path}: field '{field}' must be a table")
    for name in list(plan.get("models", {})) + list(plan.get("train", {})) + list(plan.get("benchmarks")) \
            + list(plan.get("protocols")):
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise UnbagError(f"{path}: name {name!r} may only use letters, digits and _ . + -")
    both = sorted(set(plan.get("models", {})) & set(plan.get("train", {})))
    if both:  # a trained model would silently take the place of the model of that name
        raise UnbagError(f"{path}: {both[0]!r} names both a [models] entry and a [train.{both[0]}] table; "
                         "give them different names")
    for field in ("models", "benchmarks"):
        for name, spec in plan.get(field, {}).items():
            if not isinstance(spec, str) or not spec:
                raise UnbagError(f"{path}: {field}.{name}: a spec string, got {spec!r}")
    for field, kind in (("out", str), ("seed", int), ("images_outside_root", bool)):
        if field in plan and (not isinstance(plan[field], kind) or (kind is int and isinstance(plan[field], bool))):
            raise UnbagError(f"{path}: field '{field}' must be a {kind.__name__}, got {plan[field]!r}")
    if plan.get("seed", 0) < 0:
        raise UnbagError(f"{path}: field 'seed' must be a whole number >= 0, got {plan['seed']!r}")
    _check_published(path, plan)
    return plan


def _check_published(path, plan: dict) -> None:
    """[published]: a paper's numbers for some of the plan's cells, what a report shows beside
    them: `source`, then per benchmark name a table of its `metric` key and "MODEL PROTOCOL" =
    value (a fraction, as results hold it)."""
    pub = plan.get("published")
    if pub is None:
        return
    if not isinstance(pub, dict) or not isinstance(pub.get("source"), str):
        raise UnbagError(f"{path}: published: a table with source = \"WHERE THE NUMBERS ARE FROM\"")
    names = set(plan.get("models", {})) | set(plan.get("train", {}))
    for bench, table in pub.items():
        if bench == "source":
            continue
        where = f"{path}: published.{bench}"
        if bench not in plan["benchmarks"] or not isinstance(table, dict) or not isinstance(table.get("metric"), str):
            raise UnbagError(f"{where}: a table of one of the plan's benchmarks, with metric = \"KEY\"")
        try:
            name = benchmarks.parse(plan["benchmarks"][bench]).name
        except UnbagError:
            name = None  # check_plan names a bad benchmark spec
        if name is not None and not benchmarks.summary(name).declares(table["metric"]):
            s = benchmarks.summary(name)
            raise UnbagError(f"{where}: metric {table['metric']!r} is not a metric {name} reports (its table's: "
                             f"{', '.join(s.columns)})")
        for cell, value in table.items():
            if cell == "metric":
                continue
            model, _, protocol = cell.partition(" ")
            if model not in names or protocol not in plan["protocols"]:
                raise UnbagError(f"{where}: {cell!r} is not \"MODEL PROTOCOL\" of the plan's names")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
                raise UnbagError(f"{where}.{cell}: a fraction in [0, 1], got {value!r}")


def check_plan(path: Path, plan: dict) -> None:
    """Check every spec a plan names (models, benchmarks, protocols, train tables) before anything
    is written: a mistake is an error naming the field, not a half-made run folder."""
    from . import models, protocols as protocols_
    from .training.data import check_data
    from .training.engine import TrainConfig
    for name, spec in plan.get("models", {}).items():
        try:
            models.check_spec(spec)
        except UnbagError as e:
            raise UnbagError(f"{path}: models.{name}: {e}") from None
    for name, spec in plan["benchmarks"].items():
        try:
            benchmarks.parse(spec)
        except UnbagError as e:
            raise UnbagError(f"{path}: benchmarks.{name}: {e}") from None
    for name, value in plan["protocols"].items():
        try:
            protocols_.lookup(value if isinstance(value, str) else value["protocol"])
        except UnbagError as e:
            raise UnbagError(f"{path}: protocols.{name}: {e}") from None
    from .heads import HEADS
    from .heads.train import head_config
    for name, table in plan.get("train", {}).items():
        if not isinstance(table, dict):
            raise UnbagError(f"{path}: train.{name}: a table of the method and its options")
        opts = dict(table)
        method = opts.pop("method", "clip")
        try:
            if isinstance(opts.get("data", ""), str) and opts.get("data"):
                check_data(opts["data"])  # its files there before anything is written
            if method in HEADS:  # a head: its backbone, the data its features come from, its options
                for key in HEAD_ENTRY:
                    if key in ("model", "data") and not isinstance(opts.get(key), str):
                        raise UnbagError(f"field {key!r} (a string) is required for a head")
                for key, low in (("n", 1), ("seed", 0), ("steps", 1)):  # a plan trains: at least one step, as FT
                    if key in opts:
                        at_least(key, opts[key], low)
                head_config(method, {k: v for k, v in opts.items() if k not in HEAD_ENTRY})
            else:
                TrainConfig.for_method(method, **opts)
                if "device" in opts:
                    models.check_device(opts["device"])
        except UnbagError as e:
            raise UnbagError(f"{path}: train.{name}: {e}") from None
    heads = {n for n, t in plan.get("train", {}).items() if isinstance(t, dict) and t.get("method") in HEADS}
    for name, value in plan["protocols"].items():
        spec = value if isinstance(value, str) else value["protocol"]
        if spec.startswith(TRAINED_HEAD) and spec[len(TRAINED_HEAD):] not in heads:
            raise UnbagError(f"{path}: protocols.{name}: {spec!r} names no head of the plan's [train.NAME] tables "
                             f"({', '.join(sorted(heads)) or 'none'})")


TRAINED_HEAD = "head:train."  # a protocol scoring with the head a [train.NAME] table trains
HEAD_ENTRY = ("model", "data", "n", "seed")  # a head table's fields besides the head's own options


def head_entry(name: str, table: dict, root: Path, progress: bool, device: str, model_specs: dict,
               shared: dict | None = None) -> Path:
    """Train a [train.NAME] head once: the frozen features of its `data` on its `model` (a spec, or
    a plan model's name) cached in OUT/train/NAME/features, then the head in OUT/train/NAME/head;
    reused while the table is unchanged; a changed table trains the head again, on the same
    features while the model, data, n and seed are unchanged. `shared`: the features this run's
    heads have, by what made them; a head asking for the same reads those, extracting nothing."""
    from . import models
    from .heads import head_class
    from .heads.extract import DEFAULT_N, extract, is_caption_data
    from .heads.train import head_config, train_head
    from .training.data import data_fingerprint

    out = root / "train" / name
    opts = dict(table)
    method = opts.pop("method")
    model = model_specs.get(opts["model"], opts["model"])
    # what the data holds: a rewritten caption extracts the features again; a retrained model is
    # new weights (model_specs names its folder; its weights id follows)
    entry = {"method": method, **opts, "model": model, "data_id": data_fingerprint(opts["data"]),
             "model_id": _weights_of(model)}
    record = out / "entry.json"
    saved = json.loads(record.read_text()) if record.is_file() else None
    features = out / "features"
    n = int(opts.get("n", DEFAULT_N))
    # photos' region features cost SGI's region search per image: cached only for a head that reads them
    regions = head_class(method).attends == "regions" or not is_caption_data(opts["data"])
    made_by = json.dumps([model, opts["data"], n, opts.get("seed"), regions, entry["data_id"], entry["model_id"]])
    shared = {} if shared is None else shared
    if saved == entry and (out / "head" / "head.json").is_file():
        if (features / "index.json").is_file():
            shared.setdefault(made_by, features)
        return out / "head"
    out.mkdir(parents=True, exist_ok=True)
    same = saved is not None and all(saved.get(k) == entry.get(k) for k in (*HEAD_ENTRY, "data_id", "model_id")) \
        and saved["method"] == method
    if not (same and (features / "index.json").is_file()):  # each replaces only its own earlier output
        features = shared.get(made_by) or extract(lambda: models.load(model, device=device), features, opts["data"],
                                                  n=n, seed=opts.get("seed"), regions=regions, progress=progress)
    shared.setdefault(made_by, Path(features))
    cfg = head_config(method, {k: v for k, v in opts.items() if k not in HEAD_ENTRY})
    head = train_head(features, cfg, out / "head", progress=progress)
    atomic_write(record, json.dumps(entry, indent=2) + "\n")
    return Path(head)


def run_folder(root: Path) -> Path:
    """Refuse a plan's output folder that is not a plan's folder (a folder of other files, the
    folder unbag runs in or one above it), before anything is written; mark it as a plan's."""
    guard_inputs(root, (), "the plan's out")
    # a plan's folder is added to, never replaced: there is no --overwrite to suggest
    check_out(root, "run", known=RUN_FILES,
              remedy="choose another out (the plan's `out`, or --out) for this plan's folder")
    root.mkdir(parents=True, exist_ok=True)
    mark(root, "run", RUN_FILES, grows=True)
    return root


def outside_benchmarks(root: Path, specs: dict[str, str]) -> None:
    """Refuse an output folder inside a benchmark's folder or image root (as named or once links
    are followed), before anything is written: unbag never writes into a release."""
    for name, spec in specs.items():
        if benchmarks.generated(spec):
            continue
        for r in benchmarks.image_roots(spec) + benchmarks.image_roots(spec, links=False):
            for p in (Path(os.path.normpath(os.path.abspath(root))), root.resolve()):
                if p == r or r in p.parents:
                    raise UnbagError(f"{root}: the output folder lies inside {r}, a folder of benchmark {name} "
                                     f"({spec}); unbag writes nothing into a release: choose another out")


def read_benchmarks(specs: dict[str, str], seed: int, outside: bool, loaded: dict,
                    failed: dict[str, str] | None) -> dict[str, str | None]:
    """The fingerprint of each file benchmark's files (None for generated ones), each read and
    checked once; the first few kept in `loaded` for scoring. A benchmark that cannot be read
    stops the plan, or with `failed` (the suite's) is recorded there (name -> why) and warned."""
    files, why = {}, {}
    for b, spec in specs.items():
        if spec not in files and spec not in why:
            try:
                if benchmarks.generated(spec):
                    files[spec] = None
                else:
                    got = benchmarks.load(spec, seed=seed, outside_root=outside)
                    files[spec] = got.info["files"]
                    if len(loaded) < KEEP_LOADED:
                        loaded[(spec, None)] = got
            except UnbagError as e:
                if failed is None:
                    raise UnbagError(f"benchmarks.{b}: {e}") from None
                why[spec] = str(e)
        if spec in why:
            failed[b] = why[spec]
            warn(f"{b}: not scored: {why[spec]}")
    return files


def run_plan(path: str | Path, out: str | None = None, progress: bool = True, device: str = "cpu",
             failed: dict[str, str] | None = None, recorded: str | Path | None = None) -> list[dict]:
    """Run every unfinished cell of a plan; return all cells' results. Every input is checked and
    every benchmark read before anything is written. `failed` (the suite's): a benchmark that
    cannot be read is recorded there (plan name -> why, warned) and its cells skipped, instead of
    stopping the plan. `recorded`: the plan file the run folder's summary names (default `path`)."""
    from .cache import JobCache
    from .evaluation import evaluate
    from .models import load
    from .models.base import config_id, weights_id

    plan = read_plan(path)
    check_plan(Path(path), plan)
    root = Path(os.path.expanduser(out or plan.get("out", "runs/plan")))
    outside_benchmarks(root, plan["benchmarks"])
    outside = bool(plan.get("images_outside_root", False))
    seed = int(plan.get("seed", 0))
    loaded: dict = {}
    files = read_benchmarks(plan["benchmarks"], seed, outside, loaded, failed)  # before a byte is written
    if failed is not None and set(failed) >= set(plan["benchmarks"]):
        raise UnbagError("no benchmark could be read, nothing written: "
                         + "; ".join(f"{b}: {why}" for b, why in failed.items()))
    _, _, device = dist.init(device)  # under torchrun: each rank scores a slice of every cell
    lead = dist.rank() == 0
    if lead:  # one process checks and writes the folder: another would take its temporary files for a user's
        root = run_folder(root)
        atomic_write(root / "plan.toml", Path(path).read_text())
    dist.barrier()
    model_specs = dict(plan.get("models", {}))
    from .heads import HEADS
    trained_heads, features = {}, {}
    for name, table in plan.get("train", {}).items():
        if table.get("method") in HEADS:  # a head is trained by rank 0 alone (one process, no collectives)
            if lead:
                head_entry(name, table, root, progress, device, model_specs, features)
            dist.barrier()
            trained_heads[name] = root / "train" / name / "head"
        else:
            model_specs[name] = str(train_entry(name, table, root, progress, device))
    # items per category and split of the generated benchmarks that take a number (ctrl)
    sizes = {spec: plan.get("per_category") if benchmarks.sized(spec) else None
             for spec in plan["benchmarks"].values()}
    precision = str(plan.get("precision", "auto"))
    protocols = {p: (v, {}) if isinstance(v, str) else
                 (v["protocol"], {k: x for k, x in v.items() if k not in ("protocol", "models")})
                 for p, v in plan["protocols"].items()}
    protocols = {p: (f"head:{trained_heads[v[len(TRAINED_HEAD):]]}" if v.startswith(TRAINED_HEAD) else v, o)
                 for p, (v, o) in protocols.items()}
    only = {p: v["models"] for p, v in plan["protocols"].items() if isinstance(v, dict) and "models" in v}
    cells = [(m, b, p) for m in model_specs for b in plan["benchmarks"] for p in plan["protocols"]
             if not (benchmarks.kind(plan["benchmarks"][b]).global_only and protocols[p] != ("global", {}))
             and m in only.get(p, [m])]
    results, ids, backend = [], {}, None
    cache = JobCache()  # the cells share regions and frozen features; dropped when the plan ends
    # the cells of this plan, listed before any runs: a report of the folder shows these only
    planned = [{"model": m, "benchmark": b, "protocol": p, "file": f"results/{cell_file(m, b, p)}"} for m, b, p in cells]
    if lead:
        write_json(root / "summary.json", {"plan": str(recorded or path), "cells": planned, "finished": False,
                                           **({"published": plan["published"]} if "published" in plan else {})})
    cols = [TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} cells"),
            TextColumn("{task.fields[cell]}"), TimeElapsedColumn()]
    with Progress(*cols, disable=not (progress and lead)) as bar:
        task = bar.add_task("plan", total=len(cells), cell="")
        for (m, b, p), planned_cell in zip(cells, planned):
            if failed is not None and b in failed:
                bar.advance(task)
                continue
            dest = root / planned_cell["file"]
            bar.update(task, cell=f"{m} · {b} · {p}")
            protocol, options = protocols[p]
            protocol = resolve(protocol, model_specs[m])
            res = _finished(dest)
            if backend is None or backend.spec != model_specs[m]:  # cells come model by model
                backend = load(model_specs[m], device=device)
            if res is not None and model_specs[m] not in ids:  # which weights and setup the spec means now
                ids[model_specs[m]] = (weights_id(backend), config_id(backend))
            spec = plan["benchmarks"][b]
            px = benchmarks.drawn_size(spec, min(backend.image_size))  # a generated ctrl: at the model's side
            if res is None or not _same_setup(res, model_specs[m], ids.get(model_specs[m]), protocol, options,
                                              spec, seed, files[spec], _precision(backend, precision), sizes[spec], px):
                if (spec, px) not in loaded:  # generate/read each benchmark (at each side) once per run;
                    while len(loaded) >= KEEP_LOADED:  # keep the last few (a model's cells alternate between them)
                        loaded.pop(next(iter(loaded)))
                    bar.update(task, cell=f"{m} · {b} · drawing or reading {spec}" + (f" at {px} px" if px else ""))
                    try:
                        loaded[(spec, px)] = benchmarks.load(spec, seed=seed, per_category=sizes[spec],
                                                             outside_root=outside, px=px, device=str(backend.device))
                    except UnbagError as e:
                        if failed is None:
                            raise
                        failed[b] = str(e)
                        warn(f"{b}: not scored: {e}")
                        bar.advance(task)
                        continue
                res = evaluate(backend, loaded[(spec, px)], protocol=protocol, out=str(dest), seed=seed,
                               progress=False, options=options, precision=precision, cache=cache,
                               cell=planned_cell, overwrite=True)  # the run folder's results are unbag's
            res["cell"] = planned_cell
            results.append(res)
            bar.advance(task)
    if not lead:  # rank 0 writes the results, the summary and the explanations
        return results
    write_json(root / "summary.json", {"plan": str(recorded or path), "cells": planned, "finished": True,
                                       **({"published": plan["published"]} if "published" in plan else {})})
    sgi = next((protocols[p] for p in plan["protocols"] if protocols[p][0] in SGI_PRESETS), None)
    bench = next((spec for spec in plan["benchmarks"].values() if benchmarks.kind(spec).explain), None)
    items = plan.get("explain", benchmarks.kind(bench).explain if bench else ())
    if items and sgi and bench:
        write_explanations(root, model_specs[next(iter(model_specs))], bench, items, seed, *sgi, device=device,
                           per_category=sizes[bench])
    return results


def _finished(dest: Path) -> dict | None:
    """A cell's results when its file holds them whole, with the per-item file it records
    unchanged; None (the cell runs again, with a warning when a file was damaged) otherwise."""
    if not dest.is_file():
        return None
    try:
        res = read_json(dest)
    except UnbagError as e:
        warn(f"{e}; the cell runs again")
        return None
    if not isinstance(res, dict):
        warn(f"{dest}: not a results file; the cell runs again")
        return None
    if "intervals" not in res:  # written before results recorded their intervals
        warn(f"{dest}: written before results held 95% intervals; the cell runs again")
        return None
    items = res.get("per_item")
    if items is not None:
        from .utils import items_hash
        f = dest.parent / str(items)
        if not f.is_file() or items_hash(f.read_bytes()) != res.get("per_item_sha256"):
            warn(f"{dest}: its per-item file {items} is missing or not the one it was written with; the cell "
                 "runs again")
            return None
    return res


def write_explanations(root: Path, model: str, bench: str, items: list[str], seed: int, protocol: str,
                       options: dict, device: str = "cpu", per_category: int | None = None) -> Path:
    """ROOT/explain/ITEM.png for a few items of `bench` under a plan's first SGI protocol and first
    model, drawn with exactly the options its cells were scored with (the protocol's own with the
    benchmark's declared defaults under the plan's), with ROOT/explain/index.json (file, caption,
    setup) for the report; an image is redrawn when its setup, weights included, changed."""
    from .models import load
    from .models.base import config_id, weights_id
    from .sgi.explain import explain
    from .sgi.presets import config_for

    out = root / "explain"
    out.mkdir(exist_ok=True)
    backend = load(model, device=device)
    old = {}
    if (out / "index.json").is_file():
        try:
            old = {e["file"]: e for e in read_json(out / "index.json") if isinstance(e, dict) and "file" in e}
        except (UnbagError, TypeError):
            old = {}
    index = []
    for item in items:
        b = benchmarks.load_item(bench, item, seed)
        cfg = config_for(protocol, options, b)
        setup = json.loads(json.dumps({"model": model, "model_id": weights_id(backend),
                                       "model_config_id": config_id(backend), "bench": bench, "seed": seed,
                                       "per_category": per_category, "protocol": protocol, "options": cfg.record()}))
        name = f"{item}.png"
        scores = old.get(name, {}).get("scores")
        if not ((out / name).is_file() and old.get(name, {}).get("setup") == setup and scores):  # setup changed: redraw
            exp = explain(backend, b, cfg)
            exp.save(out / name, overwrite=True)
            scores = [[round(float(v), 6) for v in row] for row in exp.scores]
        index.append({"file": name, "setup": setup, "scores": scores, "caption": f"{protocol} on {item} ({model}): "
                      "each caption segment's chosen region and its cosine"})
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


def _same_setup(res: dict, model: str, model_id: tuple | None, protocol: str, options: dict, bench: str,
                seed: int, files: str | None, precision: str = "fp32", per_category: int | None = None,
                px: int | None = None) -> bool:
    """Whether a finished cell was made by this model spec, with the same weights, and protocol with
    the options it would record now (new shipped weights or a changed default, e.g. of SGI, make
    the cell run again instead of being reused), on the same benchmark spec, seed and files
    (`files_fingerprint`), in the same precision, and on the same pixels and items where unbag
    generates them (`per_category`: the plan's, None for the default; `px`: the side it is drawn at
    for this model, None for its world's)."""
    recorded_bench = res.get("benchmark", {})
    if recorded_bench.get("spec") != bench or res.get("seed") != seed or recorded_bench.get("files") != files:
        return False
    if res.get("config", {}).get("precision") != precision:
        return False
    if any(recorded_bench.get(k) != v for k, v in benchmarks.stamp(bench, per_category, px).items()):
        return False  # made by another renderer, at another size or on other items
    from .protocols import build, recipe

    recorded = json.loads(json.dumps(build(protocol, options, bench)[1]))  # tuples -> lists, as stored
    return (res.get("model") == model and (res.get("model_id"), res.get("model_config_id")) == tuple(model_id or ())
            and res.get("config", {}).get("protocol") == protocol
            and res.get("config", {}).get("options") == recorded
            and res.get("recipe") == recipe(protocol, recorded))  # whose recipe it is, as unbag says now


def train_entry(name: str, table: dict, root: Path, progress: bool, device: str) -> Path:
    """Train a [train.NAME] model once (resuming an interrupted run); its model folder."""
    from .training.data import data_fingerprint
    from .training.engine import RUN_FILES, TrainConfig, Trainer, config_diff

    out = root / "train" / name
    opts = dict(table)
    method = opts.pop("method", "clip")
    try:
        cfg = TrainConfig.for_method(method, device=device, **opts)
    except UnbagError as e:
        raise UnbagError(f"train.{name}: {e}") from None
    saved = _trained_config(out)
    data_id = data_fingerprint(cfg.data)  # what the data holds: a rewritten caption trains again
    made_on = out.parent / f"{name}.data.json"  # beside the trainer's folder, which it replaces whole
    was = read_json(made_on).get("data_id") if made_on.is_file() else None
    if saved is not None and (config_diff(saved, cfg) or was != data_id):  # the plan or its data changed
        if dist.rank() == 0:  # every rank decides alike; one replaces
            check_out(out, "train", known=RUN_FILES)  # only a folder unbag's trainer wrote is replaced
            shutil.rmtree(out)
        dist.barrier()
    elif (out / "model" / "open_clip_config.json").is_file():
        return out / "model"
    Trainer(cfg, out).fit(resume=(out / "ckpt" / "trainer.pt").is_file(), progress=progress)
    if dist.rank() == 0:
        atomic_write(made_on, json.dumps({"data": cfg.data, "data_id": data_id}, indent=2) + "\n")
    return out / "model"


def _weights_of(model: str) -> str | None:
    """The hash of a saved model folder's weights (a plan's trained model: retrained, it changes);
    None for a spec that names no folder (a hub or registry model: its spec says which)."""
    import hashlib
    folder = Path(model)
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _trained_config(out: Path) -> dict | None:
    """The training config a run folder was made with (its checkpoint's, else its export's)."""
    for f in (out / "ckpt" / "train_config.json", out / "config.json"):
        if f.is_file():
            data = json.loads(f.read_text())
            return data.get("config", data) if f.name == "config.json" else data
    return None


PLANS = Path(__file__).parent / "plans"


def paper_plan(model: str, coco: str, sugarcrepe: str | None = None, bivlc: str | None = None,
               per_category: int | None = None, steps: int | None = None, batch_size: int | None = None,
               n: int | None = None) -> str:
    """The paper's plan (plans/paper.toml) filled in for a model and COCO's captions
    (ANNOTATIONS:IMAGES), with SugarCrepe (DIR[:IMAGE_ROOT]) and BiVLC (DIR) when given; `steps`,
    `batch_size` and `n` (features per head) override every training table's (a quick check);
    with the paper's own numbers quoted ([published]) when the model is one the paper measured."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    text = (PLANS / "paper.toml").read_text().replace("@MODEL@", model).replace("@COCO@", coco)
    extra = "".join(f'{name} = "{spec}"\n' for name, spec in (("sugarcrepe", f"sugarcrepe:{sugarcrepe}" if sugarcrepe else None),
                                                            ("bivlc", f"bivlc:{bivlc}" if bivlc else None)) if spec)
    text = text.replace('[benchmarks]\nctrl = "ctrl"\n', '[benchmarks]\nctrl = "ctrl"\n' + extra)
    if per_category is not None:
        text = text.replace("per_category = 400", f"per_category = {per_category}")
    # a quick check's few steps warm up over a tenth of them
    for key, value in (("steps", steps), ("warmup", 0.1 if steps is not None else None), ("batch_size", batch_size)):
        if value is not None:
            text = text.replace('data = "coco:', f'{key} = {value}\ndata = "coco:')
    if n is not None:  # the heads' feature caches
        for head in ("tflocal", "tfglobal", "tfregions", "tflocal-li"):
            text = text.replace(f'method = "{head}"\n', f'method = "{head}"\nn = {n}\n')
    pub = tomllib.loads((PLANS / "paper-published.toml").read_text())
    if model in pub.pop("models"):
        benches = tomllib.loads(text)["benchmarks"]
        lines = ["", "[published]", f'source = "{pub.pop("source")}"']
        for bench, table in pub.items():
            if bench in benches:
                lines += ["", f"[published.{bench}]"] + [f'"{k}" = {v}' if k != "metric" else f'metric = "{v}"'
                                                          for k, v in table.items()]
        text += "\n".join(lines) + "\n"
    return text
