"""The `unbag` command line."""
from __future__ import annotations

import argparse
import signal
import sys
import warnings

from .errors import UnbagError, UnbagWarning, warn
from .world.styles import DEFAULT as DEFAULT_STYLE, SIZES, STYLES, WORLDS, render_procs
from .world.worlds.clevr3d import WORLD as POOL_WORLD  # the world pools render (world/pool3d.py)

_default_showwarning = warnings.showwarning


# `unbag train`'s arguments that are not hyperparameters (every other flag is passed to api.train)
TRAIN_ARGS = {"cmd", "fn", "method", "model", "data", "out", "resume", "quiet", "overwrite", "no_hard_negatives"}


def _train(a: argparse.Namespace) -> None:
    from .api import train
    from .heads import HEADS

    # `is not`: a zero (--warmup 0, --layers 0) is a value, though 0 == False
    hp = {k: v for k, v in vars(a).items() if k not in TRAIN_ARGS and v is not None and v is not False}
    if a.no_hard_negatives:
        hp["hard_negatives"] = False
    out = train(a.method, a.model, a.data, a.out, resume=a.resume, progress=not a.quiet, overwrite=a.overwrite, **hp)
    print(f"{'head' if a.method in HEADS else 'model'} written to {out}")


def _add_head_options(t: argparse.ArgumentParser) -> None:
    """A flag for each head option a user sets (HeadConfig's fields with help)."""
    import dataclasses

    from .heads import HeadConfig

    for f in dataclasses.fields(HeadConfig):
        if "help" in f.metadata:
            flag = "--" + f.name.replace("_", "-")
            if str(f.type) == "bool":
                t.add_argument(flag, action="store_true", help=f.metadata["help"])
            else:
                t.add_argument(flag, type=int if str(f.type) == "int" else str, default=None, help=f.metadata["help"])


def _add_method_options(g: argparse._ArgumentGroup) -> None:
    """A flag for each option a training objective declares (its dataclass fields), named by it."""
    import dataclasses

    from .training.objectives import OBJECTIVES

    seen: set[str] = set()
    for name, obj in OBJECTIVES.items():
        for f in dataclasses.fields(obj.options) if obj.options else ():
            if f.name in seen:
                continue
            seen.add(f.name)
            flag, help_ = "--" + f.name.replace("_", "-"), f"{name}: {f.metadata.get('help', '')} ({f.default})"
            if f.type in (bool, "bool"):
                g.add_argument(flag, action="store_true", default=None, help=help_)
            else:
                g.add_argument(flag, type={"float": float, "int": int}.get(str(f.type), str), default=None, help=help_)


def _report(a: argparse.Namespace) -> None:
    from .api import report

    out = report(a.results, a.out, format=a.format, title=a.title, intervals=a.intervals, overwrite=a.overwrite,
                 baseline=None if a.baseline == "none" else a.baseline)
    print(f"report written to {out}/index.html" if a.format == "html" else f"{a.format} written to {out}")


def _compare(a: argparse.Namespace) -> None:
    from .api import compare
    from .reports.compare import print_comparison

    c = compare(a.a, a.b, metric=a.metric)
    if a.json:
        import json
        print(json.dumps(c, indent=2))
    else:
        print_comparison(c)


def _negatives(a: argparse.Namespace) -> None:
    from .api import make_negatives

    out = make_negatives(a.data, a.out, types=[t.strip() for t in a.types.split(",") if t.strip()], k=a.k, n=a.n,
                         seed=a.seed, generator=a.generator, device=a.device, progress=not a.quiet, overwrite=a.overwrite)
    print(f"negatives written to {out}")


PAPER_OPTIONS = ("model", "coco", "sugarcrepe", "bivlc", "per_category", "steps", "batch_size", "n")


def _run(a: argparse.Namespace) -> None:
    from .api import run, run_paper
    from .reports.table import print_matrix

    if a.plan == "paper":  # the packaged paper's plan, filled in (docs/plans.md)
        if not a.model or not a.coco:
            raise UnbagError("unbag run paper needs --model SPEC and --coco ANNOTATIONS:IMAGES (COCO's captions "
                             "file and its images)")
        results, report = run_paper(a.model, a.coco, a.out or "runs/paper", device=a.device, progress=not a.quiet,
                                    **{k: getattr(a, k) for k in PAPER_OPTIONS[2:]})
        print_matrix(results)
        print(f"report at {report}/index.html (the paper's own numbers beside yours where it measured this model)")
        return
    given = [f"--{k.replace('_', '-')}" for k in PAPER_OPTIONS if getattr(a, k) is not None]
    if given:
        raise UnbagError(f"{', '.join(given)}: for `unbag run paper` (a plan file says its own)")
    print_matrix(run(a.plan, a.out, device=a.device, progress=not a.quiet))


def _suite(a: argparse.Namespace) -> None:
    from . import benchmarks, dist
    from .api import suite
    from .reports.table import print_matrix, print_suite

    got = suite(a.model, a.root, a.protocol or ["global"], a.out, device=a.device, precision=a.precision,
                images_outside_root=a.images_outside_root, all_items=a.all_items, progress=not a.quiet)
    if dist.rank() != 0:
        return
    if a.detail:
        print_matrix(got.results)  # each benchmark's own table, in its official columns
    print_suite([(r["cell"]["model"], r["cell"]["protocol"], r, None) for r in got.results], tuple(got.not_applicable))
    folders = benchmarks.suite_folders()
    for folder, why in got.missing.items():
        names = folders[folder]
        print(f"{why} ({', '.join(names)}); get it from {benchmarks.BENCHMARKS[names[0]].release} "
              f"(docs/benchmarks.md#{folder})")
    for name, why in got.failed.items():
        print(f"not scored: {name}: {why}")
    print(f"results in {a.out}/results/, report at {got.report}/index.html"
          + ("" if a.detail else " (each benchmark's own columns there, or with --detail)"))


def _features(a: argparse.Namespace) -> None:
    from .api import features
    from .heads.extract import is_caption_data

    model = _model_or_builtin(a, is_caption_data(a.data))
    out = features(model, a.data, a.out, n=a.n, seed=a.seed, device=a.device, progress=not a.quiet,
                   regions=not a.no_regions,
                   overwrite=a.overwrite)
    print(f"features written to {out}")


def _world_build(a: argparse.Namespace) -> None:
    from .api import build_world

    out = build_world(a.out, seed=a.seed, per_category=a.per_category, px=a.size, style=a.style, procs=a.procs,
                      categories=a.categories.split(",") if a.categories else None, device=a.device,
                      progress=not a.quiet, overwrite=a.overwrite)
    print(f"benchmark in {out}")  # written, or kept where it was up to date (build says which)


def _world_pool(a: argparse.Namespace) -> None:
    from .api import build_pool

    out = build_pool(a.out, data=a.data, seed=a.seed, n=a.n, px=a.size, procs=a.procs, progress=not a.quiet,
                     overwrite=a.overwrite)
    print(f"pool written to {out} (train on it with --data pool:{out})")


def _world_show(a: argparse.Namespace) -> None:
    from .api import contact_sheet

    out = contact_sheet(a.out, bench=a.bench, n=a.n, seed=a.seed, style=a.style, overwrite=a.overwrite)
    print(f"contact sheet written to {out}")


def _eval(a: argparse.Namespace) -> None:
    import re
    from pathlib import Path

    from .api import evaluate
    from .benchmarks import pictures
    from .reports.table import print_results

    benches = a.bench or ["ctrl"]
    model = _model_or_builtin(a, any(pictures(spec)[0] == "photos" for spec in benches))
    for spec in benches:  # several: --out is a folder with one results file per benchmark
        out = a.out if len(benches) == 1 or not a.out else \
            str(Path(a.out) / (re.sub(r"[^A-Za-z0-9_.+-]+", "_", spec).strip("_") + ".json"))
        res = evaluate(model, spec, a.protocol, out=out, batch_size=a.batch_size, device=a.device,
                       seed=a.seed, progress=not a.quiet, precision=a.precision, overwrite=a.overwrite,
                       images_outside_root=a.images_outside_root, **_sgi_options(a))
        if res:  # under torchrun only rank 0 has the results
            print_results(res)
            if out:
                print(f"results written to {out}")


def _sgi_options(a: argparse.Namespace) -> dict:
    """The SGI flags that were given (the protocol refuses them unless it is an SGI protocol)."""
    from dataclasses import fields

    from .sgi.config import SGIConfig
    return {f.name: getattr(a, f.name) for f in fields(SGIConfig) if getattr(a, f.name) is not None}


def _add_sgi_options(e: argparse.ArgumentParser) -> None:
    """A flag for each SGI option (SGIConfig's fields and their help); none given: the preset's."""
    from dataclasses import fields

    from .sgi.config import SGIConfig
    g = e.add_argument_group("SGI options (--protocol sgi or sgi:paper; they override the preset)")
    for f in fields(SGIConfig):
        kind = {"float": float, "int": int}.get(str(f.type), None)  # the rest are read as given (scales: "0.5,0.333")
        flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
        g.add_argument(flag, dest=f.name, default=None, metavar=flag[2:].upper().replace("-", "_"),
                       help=f.metadata["help"], **({"type": kind} if kind else {}))


def _explain(a: argparse.Namespace) -> None:
    from rich.console import Console

    from .api import explain
    from .benchmarks import pictures
    from .sgi.explain import drawn_by_unbag
    from .utils import check_file_out

    inputs = (a.image,) if a.image else ()
    check_file_out(a.out, "explain", drawn_by_unbag, a.overwrite, inputs)  # before the work
    a.model = _model_or_builtin(a, bool(a.image) or (bool(a.item) and pictures(a.bench)[0] == "photos"))
    if a.item:
        exp = explain(a.model, protocol=a.protocol, bench=a.bench, item=a.item, seed=a.seed, device=a.device,
                      **_sgi_options(a))
    elif a.image and a.caption:
        exp = explain(a.model, a.image, a.caption, a.protocol, device=a.device, **_sgi_options(a))
    else:
        raise UnbagError("explain needs --image and --caption, or --bench and --item")
    Console().print(exp.table())
    print(f"explanation written to {exp.save(a.out, overwrite=a.overwrite, inputs=inputs)}")


def _export(a: argparse.Namespace) -> None:
    import json

    from .api import export
    from .models import stem

    out = export(a.model, a.out, device=a.device, overwrite=a.overwrite)
    cfg = out / "open_clip_config.json"
    model_cfg = json.loads(cfg.read_text())["model_cfg"] if cfg.is_file() else {}
    own = [k for k in stem.OWN_KEYS if k in model_cfg]
    if own:
        print(f"model written to {out} in open_clip's local-dir layout; plain open_clip cannot build "
              f"unbag's own tower ({', '.join(own)}): load it with unbag.load_model({str(out)!r})")
    else:
        print(f"model written to {out} (open_clip loads it as local-dir:DIR, transformers' folders with "
              "from_pretrained)")


def _demo(a: argparse.Namespace) -> None:
    from .api import demo
    from .reports.table import print_matrix

    results, report = demo(a.out, progress=not a.quiet)
    print_matrix(results)
    print(f"results in {a.out}/results/, report at {report}/index.html")


def _add_overwrite(p: argparse.ArgumentParser) -> None:
    p.add_argument("--overwrite", action="store_true", help="replace --out even if it holds files unbag did "
                   "not write (without it such a folder is refused)")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    if issubclass(category, UnbagWarning):
        print(f"unbag: warning: {message}", file=sys.stderr)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


def parser(methods: bool = True, benches: bool = True, sgi: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; `methods`: list the registered methods and their own flags in
    `train`, `benches`: the registered benchmarks in `eval`, `sgi`: SGI's flags in `eval` and
    `explain` (they import torch or numpy: main leaves each out unless the command takes it)."""
    from . import __version__

    p = argparse.ArgumentParser(prog="unbag", description="Measure and improve binding in dual encoders.")
    p.add_argument("--version", action="version", version=f"unbag {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    for build in (_p_demo, _p_world, _p_train, _p_eval, _p_features, _p_export, _p_run, _p_suite, _p_report,
                  _p_compare, _p_negatives, _p_explain):
        build(sub, methods, benches, sgi)
    _show_defaults(p)
    return p


def _p_demo(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag demo`'s parser."""
    d = sub.add_parser("demo", help="the main job: shipped models x protocols on ctrl + report")
    d.add_argument("--out", default="unbag-demo", help="folder for results (default: unbag-demo)")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(fn=_demo)


def _p_world(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag world build | pool | show`'s parser."""
    w = sub.add_parser("world", help="the controlled world").add_subparsers(dest="world_cmd", required=True)
    b = w.add_parser("build", help="write a ctrl benchmark to disk")
    b.add_argument("--out", required=True)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--per-category", type=int, default=400, help="items per category and split")
    b.add_argument("--size", type=int, default=None,
                   help="image side in pixels (default: the world's, " + ", ".join(f"{k} {v}" for k, v in SIZES.items()) + ")")
    b.add_argument("--categories", default=None, help="comma-separated subset (default: all)")
    b.add_argument("--style", default=None, choices=STYLES,
                   help="; ".join(f"{w.name}: {w.about} (format {w.ctrl_version})" for w in WORLDS.values())
                   + f"; default {DEFAULT_STYLE}")
    b.add_argument("--procs", type=int, default=render_procs(),
                   help="rendering processes, for a world that pays for them (the same bytes for any number; "
                   "default: the CPU count, at most 8)")
    b.add_argument("--device", default="cpu", help="cpu | cuda: where the 3D world's ray caster runs (cuda: one "
                   "process; the same pictures up to float rounding, docs/world3d.md)")
    b.add_argument("--quiet", action="store_true")
    b.add_argument("--overwrite", action="store_true", help="replace --out even if it holds files unbag did not "
                   "write, and draw again a folder already built from the same recipe (without it that one is kept)")
    b.set_defaults(fn=_world_build)
    pl = w.add_parser("pool", help="render a 3D training stream once, for --data pool:DIR")
    pl.add_argument("--out", required=True)
    pl.add_argument("--data", default=f"world@{POOL_WORLD.name}:finetuning",
                    help=" | ".join(f"world@{POOL_WORLD.name}:{d}" for d in POOL_WORLD.distributions()))
    pl.add_argument("--seed", type=int, default=0, help="the stream's seed")
    pl.add_argument("--n", type=int, default=4096, help="samples (each with its twin when it has one)")
    pl.add_argument("--size", type=int, default=POOL_WORLD.px,
                    help=f"image side in pixels: the input size of the model trained on it (default {POOL_WORLD.px})")
    pl.add_argument("--procs", type=int, default=render_procs(), help="rendering processes")
    pl.add_argument("--quiet", action="store_true")
    _add_overwrite(pl)
    pl.set_defaults(fn=_world_pool)
    s = w.add_parser("show", help="draw a labelled contact sheet of SWAP items")
    s.add_argument("--out", required=True, help="PNG file")
    s.add_argument("--bench", default="ctrl", help="ctrl or ctrl:DIR")
    s.add_argument("--n", type=int, default=2, help="items per category and split")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--style", default=None, choices=STYLES, help=f"the world of the generated ctrl (default {DEFAULT_STYLE})")
    s.add_argument("--overwrite", action="store_true", help="replace --out even if unbag did not draw it")
    s.set_defaults(fn=_world_show)


def _p_train(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag train`'s parser."""
    t = sub.add_parser("train", help="train or fine-tune a model")
    if methods:
        from .heads import HEADS
        from .training.objectives import OBJECTIVES
    listed = f"{' | '.join(sorted(OBJECTIVES))}; heads: {' | '.join(sorted(HEADS))}" if methods else "a method"
    t.add_argument("--method", required=True, help=listed)
    t.add_argument("--model", default=None, help="model spec to start from (default open_clip:unbag-tiny@random; heads: "
                   "the feature cache's backbone, checked when given)")
    t.add_argument("--data", default="world", help="world[:finetuning|pretraining|pretraining-web|"
                   "pretraining-siblings] (the default world) | world@WORLD[:DIST] | pool:DIR | csv:PATH | coco:ANNOTATIONS[:IMAGES] | "
                   "jsonl:PATH | wds:URLS | triplets:FILE.jsonl | degla:FILE[:IMAGE_DIR], or a feature cache DIR for the heads")
    if methods:
        _add_head_options(t)
    t.add_argument("--no-hard-negatives", action="store_true", help="heads on caption data: leave each "
                   "caption's hard negative out of the loss (the paper's variant without them)")
    t.add_argument("--steps", type=int, default=None, help="optimisation steps (1000)")
    t.add_argument("--out", required=True)
    t.add_argument("--resume", action="store_true", help="continue from OUT/ckpt")
    g = t.add_argument_group("hyperparameters (default: the method's, docs/training.md)")
    g.add_argument("--batch-size", type=int, default=None, help="global batch (heads: 64)")
    g.add_argument("--lr", type=float, default=None, help="heads: 2e-3")
    g.add_argument("--min-lr", type=float, default=None, help="end of the cosine schedule")
    g.add_argument("--warmup", type=float, default=None, help="steps, or a fraction of the run if < 1")
    g.add_argument("--weight-decay", type=float, default=None)
    g.add_argument("--eps", type=float, default=None, help="AdamW epsilon")
    g.add_argument("--grad-clip", type=float, default=None)
    g.add_argument("--lock-image", action="store_true", default=None, help="freeze the image tower")
    g.add_argument("--lock-text", action="store_true", default=None, help="freeze the text tower")
    g.add_argument("--unlock-last", type=int, default=None, help="last N blocks of a locked tower stay trainable")
    g.add_argument("--accum", type=int, default=None, help="micro-batches per step (gradient accumulation)")
    g.add_argument("--precision", default=None, help="auto (bf16 on CUDA) | fp32 | bf16 | fp16")
    g.add_argument("--ema", type=float, default=None, help="EMA teacher decay (0: none)")
    g.add_argument("--patch-dropout", type=float, default=None, help="share of each image's patch tokens "
                   "dropped in training (FLIP, arXiv 2212.00794; open_clip ViTs; 0: none)")
    if methods:
        _add_method_options(g)
    g.add_argument("--select", default=None, help="ctrl-id[@WORLD][:N]: export the checkpoint with the "
                   "best in-distribution validation score on the default world or WORLD (global cosine, N SWAP items "
                   "per category)")
    t.add_argument("--seed", type=int, default=None, help="(0)")
    t.add_argument("--workers", type=int, default=None, help="data loader processes (1)")
    t.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    t.add_argument("--compile", action="store_true", help="torch.compile the loss step")
    t.add_argument("--ckpt-every", type=int, default=None, help="steps between checkpoints (200)")
    t.add_argument("--log-every", type=int, default=None, help="steps between log lines (10)")
    t.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    t.add_argument("--quiet", action="store_true")
    _add_overwrite(t)
    t.set_defaults(fn=_train)


def _p_eval(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag eval`'s parser."""
    e = sub.add_parser("eval", help="score a model on a benchmark")
    e.add_argument("--model", default=None, help="model spec (default: builtin, unbag's 3.5M-parameter model of "
                   "synthetic scenes; warned about on photographs)")
    if benches:
        from .benchmarks import forms
    e.add_argument("--bench", action="append", default=None, help=(forms() if benches else "a benchmark spec")
                   + " (layouts: docs/benchmarks.md); "
                   "repeat it for several (e.g. zero-shot datasets): --out is then a folder of one file each")
    e.add_argument("--protocol", default="global", help="global | sgi (unbag's SGI) | sgi:paper (the paper's "
                   "recipe) | head:PATH | head:builtin:tflocal|tfglobal|tfregions|tflocal-li (docs/sgi.md, docs/heads.md) | "
                   "ttm[:KEY=VALUE,...] (Test-Time Matching: adapts the model on the scored items, transductive)")
    e.add_argument("--out", default=None, help="results JSON (per-item JSONL is written beside it)")
    e.add_argument("--batch-size", type=int, default=256)
    e.add_argument("--precision", default="auto", help="auto (bf16 on CUDA, fp32 elsewhere) | fp32 | bf16 | fp16; "
                   "recorded in the results (CLIP_benchmark's default: bf16 on CPU, fp16 on CUDA)")
    e.add_argument("--seed", type=int, default=0, help="world seed for the generated ctrl benchmark")
    e.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    e.add_argument("--quiet", action="store_true")
    e.add_argument("--images-outside-root", action="store_true", help="read a benchmark's images where its file "
                   "points even outside its folder and image root (absolute paths, ../; refused without it; links "
                   "inside the folders are followed anyway; recorded in the results)")
    e.add_argument("--overwrite", action="store_true", help="replace --out (and its .items.jsonl) even if unbag "
                   "did not write them (never a benchmark's own file)")
    if sgi:
        _add_sgi_options(e)
    e.set_defaults(fn=_eval)


def _p_features(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag features`'s parser."""
    f = sub.add_parser("features", help="cache frozen features for head training")
    f.add_argument("--model", default=None, help="model spec (default: builtin, unbag's 3.5M-parameter model of "
                   "synthetic scenes; warned about on photographs)")
    f.add_argument("--data", default="world", help="a world stream or pool as `train` reads it: "
                   "world[@WORLD][:DIST] | pool:DIR (samples and their twins) | swaps[@WORLD] (in-distribution SWAP "
                   "items of the default world or WORLD) | caption data as "
                   "`train` reads it: csv:PATH | jsonl:PATH | coco:ANNOTATIONS[:IMAGES] | "
                   "wds:URLS | degla:FILE[:IMAGE_DIR] (each caption with a hard negative: the file's own, "
                   "else unbag's typed negatives)")
    f.add_argument("--seed", type=int, default=None, help="the stream's or the items' seed (default: world 1, "
                   "swaps 1000, caption data 0: its order)")
    f.add_argument("--n", type=int, default=20000, help="number of samples (caption data: the first N records)")
    f.add_argument("--no-regions", action="store_true", help="caption data: skip SGI region features "
                   "(TFRegions needs them)")
    f.add_argument("--out", required=True)
    f.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    f.add_argument("--quiet", action="store_true")
    _add_overwrite(f)
    f.set_defaults(fn=_features)


def _p_export(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag export`'s parser."""
    xp = sub.add_parser("export", help="write a model as a plain folder its library loads (open_clip local-dir, "
                        "or transformers)")
    xp.add_argument("model", help="a model spec, e.g. builtin or builtin:clic")
    xp.add_argument("--out", required=True)
    xp.add_argument("--device", default="cpu")
    _add_overwrite(xp)
    xp.set_defaults(fn=_export)


def _p_run(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag run`'s parser."""
    r = sub.add_parser("run", help="run a plan: models x benchmarks x protocols (resumable)")
    r.add_argument("plan", help="a TOML plan file (docs/plans.md), or `paper`: the packaged plan of the SGI / TFLocal "
                   "paper's experiment (arXiv 2604.11496), filled in by the options below")
    r.add_argument("--out", default=None, help="overrides the plan's out (paper: default runs/paper)")
    r.add_argument("--model", default=None, help="paper: the model spec, e.g. open_clip:ViT-B-32-quickgelu@openai")
    r.add_argument("--coco", default=None, help="paper: COCO's captions file and images, ANNOTATIONS:IMAGES "
                   "(captions_train2017.json:train2017/), what FT and the heads train on")
    r.add_argument("--sugarcrepe", default=None, help="paper: SugarCrepe as DIR[:IMAGE_ROOT] (docs/benchmarks.md)")
    r.add_argument("--bivlc", default=None, help="paper: BiVLC's DIR")
    r.add_argument("--per-category", type=int, default=None, help="paper: ctrl's items per category and split (400)")
    r.add_argument("--steps", type=int, default=None, help="paper: every training table's steps (a quick check)")
    r.add_argument("--batch-size", type=int, default=None, help="paper: every training table's batch size")
    r.add_argument("--n", type=int, default=None, help="paper: COCO records each head's feature cache holds (20000)")
    r.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(fn=_run)


def _p_suite(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag suite`'s parser."""
    su = sub.add_parser("suite", help="every compositionality benchmark found under a root, one table (resumable)")
    su.add_argument("--model", required=True, help="model spec, e.g. open_clip:ViT-B-32-quickgelu@openai (builtin: "
                    "unbag's 3.5M-parameter model of synthetic scenes)")
    su.add_argument("--root", required=True, help="a folder holding one folder per benchmark: ROOT/NAME/ is what "
                    "NAME:DIR reads; image roots elsewhere in ROOT/suite.toml (docs/benchmarks.md, 'The suite')")
    su.add_argument("--protocol", action="append", default=None, help="global (default) | sgi | sgi:paper | "
                    "head:builtin:tflocal | ttm (transductive) ...; repeat it for several")
    su.add_argument("--out", default="unbag-suite", help="run folder (default: unbag-suite); a rerun reuses "
                    "its finished cells")
    su.add_argument("--precision", default="auto", help="auto (bf16 on CUDA, fp32 elsewhere) | fp32 | bf16 | fp16")
    su.add_argument("--images-outside-root", action="store_true", help="read images that a release names outside "
                    "their benchmark's folder and image root (absolute paths, ../); the results record it")
    su.add_argument("--all-items", action="store_true", help="also score the readings shown beside the suite and "
                    "never averaged: VL-CheckList's every item (the suite's VL-CheckList is the official ITC run's, "
                    "each file's first 1,000 items: vl-checklist-1k)")
    su.add_argument("--detail", action="store_true", help="also print each benchmark's own table in its official "
                    "columns (wide ones in blocks of columns; the report always has them)")
    su.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    su.add_argument("--quiet", action="store_true")
    su.set_defaults(fn=_suite)


def _p_report(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag report`'s parser."""
    rp = sub.add_parser("report", help="HTML + Markdown report of results files")
    rp.add_argument("results", nargs="+", help="results JSON files, or run folders (OUT of unbag run; their "
                    "SGI explanation images are linked)")
    rp.add_argument("--out", required=True, help="report folder (html), or the file --format latex | csv writes")
    rp.add_argument("--format", default="html", choices=("html", "latex", "csv"),
                    help="html: a folder with index.html and report.md; latex: booktabs tables, the best of each "
                         "column in bold; csv: one row per model, benchmark, protocol and metric, with its interval")
    rp.add_argument("--intervals", action="store_true", help="latex: each number ± the half-width of its 95%% interval")
    rp.add_argument("--title", default="unbag results")
    rp.add_argument("--baseline", default="global", help="the protocol each grid row is compared with, paired over "
                    "the same items (its model's row of that name; default global; none: no such column)")
    _add_overwrite(rp)
    rp.set_defaults(fn=_report)


def _p_compare(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag compare`'s parser."""
    cp = sub.add_parser("compare", help="two results on the same items: paired difference, McNemar, items apart")
    cp.add_argument("a", help="results file A (of unbag eval, run or suite, with its per-item file beside it)")
    cp.add_argument("b", help="results file B, on the same items")
    cp.add_argument("--metric", default=None, help="metric key (default: the benchmark's headline; ctrl: all/all/group)")
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.set_defaults(fn=_compare)


def _p_negatives(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag negatives`'s parser."""
    n = sub.add_parser("negatives", help="write typed hard negatives in DeGLA's layout")
    n.add_argument("--data", default="world", help="world[@WORLD][:DIST] (stream "
                   "samples) | csv:PATH | jsonl:PATH")
    n.add_argument("--types", default="reorder,swap_nouns,swap_adjectives,replace_adjectives,replace_nouns")
    n.add_argument("--k", type=int, default=4, help="negatives per caption")
    n.add_argument("--n", type=int, default=1000, help="world: number of stream samples")
    n.add_argument("--seed", type=int, default=0)
    n.add_argument("--generator", default="rules", help="rules | llm:MODEL_DIR (a local causal LM)")
    n.add_argument("--out", required=True, help="negatives.json")
    n.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    n.add_argument("--quiet", action="store_true")
    n.add_argument("--overwrite", action="store_true", help="replace --out (and its .meta.json) even if unbag did "
                   "not write them (never the caption file read)")
    n.set_defaults(fn=_negatives)


def _p_explain(sub, methods: bool, benches: bool, sgi: bool) -> None:
    """`unbag explain`'s parser."""
    x = sub.add_parser("explain", help="draw which region each caption segment matches under SGI")
    x.add_argument("--model", default=None, help="model spec (default: builtin, unbag's 3.5M-parameter model of "
                   "synthetic scenes; warned about on photographs)")
    x.add_argument("--image", default=None)
    x.add_argument("--caption", default=None)
    x.add_argument("--bench", default="ctrl", help="with --item: ctrl or ctrl:DIR")
    x.add_argument("--item", default=None, help="item id, e.g. ood-color-0003")
    x.add_argument("--protocol", default="sgi", help="sgi (unbag's SGI) | sgi:paper (the paper's recipe)")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--out", default="explain.png")
    x.add_argument("--device", default=None, help="cuda | cpu (default: cuda when available)")
    x.add_argument("--overwrite", action="store_true", help="replace --out even if unbag did not draw it (never "
                   "the --image explained)")
    if sgi:
        _add_sgi_options(x)
    x.set_defaults(fn=_explain)


def _show_defaults(p: argparse.ArgumentParser) -> None:
    """Every flag's help ends with its default, unless its text already says it."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in action.choices.values():
                _show_defaults(sp)
        elif action.option_strings and action.default not in (None, False, argparse.SUPPRESS) \
                and "(default" not in (action.help or "") and action.help != argparse.SUPPRESS:
            action.help = f"{action.help or ''} (default: {action.default})".strip()


BUILTIN_ON_PHOTOS = ("no --model given: using the built-in model, a 3.5M-parameter dual encoder unbag trained on its "
                     "own synthetic scenes (docs/model-card.md); on photographs its numbers say nothing about CLIP. "
                     "Pass --model SPEC, e.g. open_clip:ViT-B-32-quickgelu@openai")


def _model_or_builtin(a: argparse.Namespace, photos: bool) -> str:
    """The --model given, else the built-in model, with a plain warning where it reads photographs."""
    if a.model is not None:
        return a.model
    if photos:
        warn(BUILTIN_ON_PHOTOS)
    return "builtin"


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = parser(methods=given[:1] == ["train"], benches=given[:1] == ["eval"],
                  sgi=given[:1] in (["eval"], ["explain"])).parse_args(argv)
    if getattr(args, "quiet", False):  # transformers' and the hub's bars too (read when they are imported)
        import os
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
        if "transformers" in sys.modules:
            sys.modules["transformers"].utils.logging.disable_progress_bar()
    warnings.simplefilter("always", UnbagWarning)
    warnings.showwarning = _show_warning
    previous = _on_sigterm()
    try:
        for name in ("seed", "n", "k", "size", "per_category", "procs"):  # counts no command takes below these
            value, low = getattr(args, name, None), 0 if name == "seed" else 1
            if value is not None and value < low:
                raise UnbagError(f"--{name.replace('_', '-')} {value}: must be a whole number >= {low}")
        args.fn(args)
        from . import dist
        dist.finish()  # under torchrun: all ranks leave the process group together
    except UnbagError as e:
        print(f"unbag: error: {e}", file=sys.stderr)
        return 2
    except Terminated:
        print("unbag: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("unbag: interrupted", file=sys.stderr)
        return 130
    finally:
        if "stop" in _term:
            _term.pop("stop").set()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so that what is half-written is cleaned up as on Ctrl-C."""


_term: dict = {}  # the watch that asks again while a SIGTERM is not yet handled


def _raise_terminated(signum, frame) -> None:
    """Raise Terminated in the main thread. Python may lose an exception raised in a destructor or
    in library code that clears errors, and the process would go on working until killed: a watch
    thread sends the signal again each second until `main` has handled it. While temporary files
    are being removed it waits for that to finish."""
    from .utils import removing_now
    if "stop" not in _term:
        import _thread
        import threading
        _term["stop"] = stop = threading.Event()

        def ask_again() -> None:
            while not stop.wait(1.0):
                _thread.interrupt_main(signal.SIGTERM)
        threading.Thread(target=ask_again, daemon=True).start()
    if not removing_now():
        raise Terminated()


def _on_sigterm():
    """Handle SIGTERM as SIGINT is handled (temporary files and folders removed); the previous
    handler, or None where signals cannot be set (not the main thread)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_terminated)


if __name__ == "__main__":
    sys.exit(main())
