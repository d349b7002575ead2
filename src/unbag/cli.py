"""The `unbag` command line."""
from __future__ import annotations

import argparse
import sys

from .errors import UnbagError


def _train(a: argparse.Namespace) -> None:
    from .heads.train import HEADS
    if a.method in HEADS:
        return _train_head(a)
    from .training.engine import TrainConfig, Trainer

    cfg = TrainConfig.for_method(
        a.method, model=a.model, data=a.data, steps=a.steps, batch_size=a.batch_size, lr=a.lr,
        min_lr=a.min_lr, warmup=a.warmup, weight_decay=a.weight_decay, eps=a.eps, grad_clip=a.grad_clip,
        seed=a.seed, workers=a.workers, compile=a.compile or None, threads=a.threads,
        ckpt_every=a.ckpt_every, log_every=a.log_every, device=a.device, lock_image=a.lock_image,
        lock_text=a.lock_text, unlock_last=a.unlock_last, accum=a.accum, precision=a.precision,
        ema=a.ema, select=a.select)
    out = Trainer(cfg, a.out).fit(resume=a.resume, progress=not a.quiet)
    print(f"model written to {out}")


def _train_head(a: argparse.Namespace) -> None:
    from . import models
    from .heads.common import HeadConfig
    from .heads.features import FeatureCache
    from .heads.train import HeadTrainConfig, train_head

    FeatureCache(a.data, models.load(a.model))  # refuses a cache of another backbone
    cfg = HeadTrainConfig(head=HeadConfig(kind=a.method, text=a.text, width=a.width, layers=a.layers,
                                          early=a.early),
                          steps=a.steps, batch_size=a.batch_size or 64, lr=a.lr or 2e-3,
                          warmup=a.warmup if a.warmup is not None else 50, seed=a.seed)
    out = train_head(a.data, cfg, a.out, progress=not a.quiet)
    print(f"head written to {out}")


def _report(a: argparse.Namespace) -> None:
    from .reports.html import write_report

    out = write_report(a.results, a.out, title=a.title,
                       explain_model=None if a.no_explain else a.explain_model)
    print(f"report written to {out}/index.html")


def _negatives(a: argparse.Namespace) -> None:
    from .negatives.export import export

    types = tuple(t.strip() for t in a.types.split(",") if t.strip())
    out = export(a.data, a.out, types, a.k, a.n, a.seed, a.generator, a.device, progress=not a.quiet)
    print(f"negatives written to {out}")


def _run(a: argparse.Namespace) -> None:
    from .run import print_matrix, run_plan

    results = run_plan(a.plan, a.out, progress=not a.quiet, device=a.device)
    print_matrix(results)


def _features(a: argparse.Namespace) -> None:
    from . import models
    from .heads.features import extract_swaps, extract_world

    name, _, seed = a.data.partition(":")
    extract = {"world": (extract_world, 1), "swaps": (extract_swaps, 1000)}
    if name not in extract:
        raise UnbagError(f"unknown feature data {a.data!r}; available: world[:SEED], swaps[:SEED]")
    fn, default_seed = extract[name]
    out = fn(models.load(a.model, device=a.device), a.out, n=a.n,
             seed=int(seed) if seed else default_seed, progress=not a.quiet)
    print(f"features written to {out}")


def _world_build(a: argparse.Namespace) -> None:
    from .world.io import build

    out = build(a.out, seed=a.seed, per_category=a.per_category, px=a.size,
                categories=a.categories.split(",") if a.categories else None, progress=not a.quiet)
    print(f"benchmark written to {out}")


def _world_show(a: argparse.Namespace) -> None:
    from .world.sheet import contact_sheet

    out = contact_sheet(a.out, bench=a.bench, n=a.n, seed=a.seed)
    print(f"contact sheet written to {out}")


def _eval(a: argparse.Namespace) -> None:
    from .evaluation import evaluate

    evaluate(model=a.model, bench=a.bench, protocol=a.protocol, out=a.out, batch_size=a.batch_size,
             device=a.device, seed=a.seed, progress=not a.quiet, options=_sgi_options(a))


def _sgi_options(a: argparse.Namespace) -> dict:
    if a.protocol != "sgi":
        return {}
    return {"regions": a.regions, "mode": a.region_mode, "assign": a.assign, "match": a.match,
            "mix": a.mix, "segmenter": a.segmenter, "cache_dir": a.cache_dir,
            "relations": a.relations, "relation_weight": a.relation_weight,
            "scales": _floats(a.scales, "--scales") if a.scales else None, "phases": a.phases}


def _floats(text: str, flag: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise UnbagError(f"{flag} takes comma-separated numbers, got {text!r}") from None
    if not all(0 < v <= 1 for v in vals):
        raise UnbagError(f"{flag} values are fractions of the image side in (0, 1], got {text!r}")
    return vals


def _add_sgi_options(e: argparse.ArgumentParser) -> None:
    g = e.add_argument_group("SGI options (--protocol sgi)")
    g.add_argument("--regions", default=None, help="gt | grid | proposals | blobs, optionally +groups "
                   "(default blobs+groups)")
    g.add_argument("--region-mode", default=None, help="mask (default: keep in place) | crop (zoom)")
    g.add_argument("--assign", default=None, help="max (default, the paper's) | hungarian (one-to-one)")
    g.add_argument("--match", default=None, help="kind (default: object segments -> single regions) | all")
    g.add_argument("--mix", type=float, default=None, help="weight of the global score (default 0)")
    g.add_argument("--segmenter", default=None, help="auto (default) | spacy | rules")
    g.add_argument("--relations", default=None, help="cosine (default, the paper's) | geometry "
                   "(also check left/right/above/below between the chosen regions)")
    g.add_argument("--relation-weight", type=float, default=None, help="weight of the geometry check (0.1)")
    g.add_argument("--scales", default=None, help="grid window sides as fractions, e.g. 0.5,0.333")
    g.add_argument("--phases", type=int, default=None, help="mask mode: encode each region at N shifts "
                   "against the patch grid (diagonal, k/N of a patch) and average (default 2; 1 = one view)")
    g.add_argument("--cache-dir", default=None, help="keep region features on disk here")


def _explain(a: argparse.Namespace) -> None:
    from . import models
    from .sgi.explain import bench_item, explain, single_item
    from .sgi.protocol import SGIConfig

    if a.item:
        bench = bench_item(a.bench, a.item, seed=a.seed)
    elif a.image and a.caption:
        bench = single_item(a.image, a.caption)
    else:
        raise UnbagError("explain needs --image and --caption, or --bench and --item")
    a.protocol = "sgi"
    cfg = SGIConfig(**{k: v for k, v in _sgi_options(a).items() if v is not None})
    out = explain(models.load(a.model, device=a.device), bench, cfg, a.out)
    print(f"explanation written to {out}")


def _demo(a: argparse.Namespace) -> None:
    from pathlib import Path

    from .reports.html import write_report
    from .run import print_matrix, run_plan

    plan = Path(__file__).resolve().parent / "plans" / "demo.toml"
    results = run_plan(plan, a.out, progress=not a.quiet)
    print_matrix(results)
    report = write_report([a.out], Path(a.out) / "report", title="unbag demo: binding, ID and OOD")
    print(f"results in {a.out}/results/, report at {report}/index.html")


def parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="unbag", description="Measure and improve binding in dual encoders.")
    p.add_argument("--version", action="version", version=f"unbag {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    d = sub.add_parser("demo", help="the main job: shipped models x protocols on ctrl + report")
    d.add_argument("--out", default="unbag-demo", help="folder for results (default: unbag-demo)")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(fn=_demo)

    w = sub.add_parser("world", help="the controlled world").add_subparsers(dest="world_cmd", required=True)
    b = w.add_parser("build", help="write a ctrl benchmark to disk")
    b.add_argument("--out", required=True)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--per-category", type=int, default=400, help="items per category and split")
    b.add_argument("--size", type=int, default=64, help="image side in pixels")
    b.add_argument("--categories", default=None, help="comma-separated subset (default: all)")
    b.add_argument("--quiet", action="store_true")
    b.set_defaults(fn=_world_build)
    s = w.add_parser("show", help="draw a labelled contact sheet of SWAP items")
    s.add_argument("--out", required=True, help="PNG file")
    s.add_argument("--bench", default="ctrl", help="ctrl or ctrl:DIR")
    s.add_argument("--n", type=int, default=2, help="items per category and split")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(fn=_world_show)

    t = sub.add_parser("train", help="train or fine-tune a model")
    t.add_argument("--method", default="clip", help="clip | ft | negclip | clic | degla | tflocal | tflocal-li | "
                   "tfglobal | tfregions")
    t.add_argument("--model", default="open_clip:unbag-tiny", help="model spec to start from")
    t.add_argument("--data", default="world", help="world[:finetuning|pretraining|pretraining-web] | "
                   "csv:PATH | jsonl:PATH | wds:URLS | degla:FILE[:IMAGE_DIR], or a feature cache DIR "
                   "for the heads")
    t.add_argument("--text", default="phrases", help="heads: phrases (each encoded alone) | tokens")
    t.add_argument("--width", type=int, default=64, help="heads: transformer width")
    t.add_argument("--layers", type=int, default=1, help="heads: layers")
    t.add_argument("--early", action="store_true", help="tflocal: attend to first-block patches too")
    t.add_argument("--steps", type=int, default=1000)
    t.add_argument("--out", required=True)
    t.add_argument("--resume", action="store_true", help="continue from OUT/ckpt")
    g = t.add_argument_group("hyperparameters (default: the method's, from the spec)")
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
    g.add_argument("--select", default=None, help="ctrl-id[:N]: export the checkpoint with the best "
                   "in-distribution validation score (global cosine, N SWAP items per category)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--workers", type=int, default=1, help="data loader processes")
    t.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    t.add_argument("--compile", action="store_true", help="torch.compile the loss step")
    t.add_argument("--ckpt-every", type=int, default=200)
    t.add_argument("--log-every", type=int, default=10)
    t.add_argument("--device", default="cuda" if _cuda() else "cpu")
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(fn=_train)

    e = sub.add_parser("eval", help="score a model on a benchmark")
    e.add_argument("--model", default="builtin")
    e.add_argument("--bench", default="ctrl", help="ctrl (generated) | ctrl:DIR (built with `world build`) | "
                   "ctrl-retrieval[:N] | sugarcrepe:DIR[:IMAGE_ROOT] | sugarcrepe++:DIR[:IMAGE_ROOT] | "
                   "aro-vgr:DIR | aro-vga:DIR | aro-coco-order:DIR | aro-flickr-order:DIR | "
                   "valse:DIR[:IMAGE_ROOT] | winoground:DIR | bivlc:DIR | imagefolder:DIR | "
                   "karpathy:JSON[:IMAGE_ROOT] (layouts: docs/benchmarks.md)")
    e.add_argument("--protocol", default="global", help="global | sgi | head:PATH")
    e.add_argument("--out", default=None, help="results JSON (per-item JSONL is written beside it)")
    e.add_argument("--batch-size", type=int, default=256)
    e.add_argument("--seed", type=int, default=0, help="world seed for the generated ctrl benchmark")
    e.add_argument("--device", default="cuda" if _cuda() else "cpu")
    e.add_argument("--quiet", action="store_true")
    _add_sgi_options(e)
    e.set_defaults(fn=_eval)
    f = sub.add_parser("features", help="cache frozen features for head training")
    f.add_argument("--model", default="builtin")
    f.add_argument("--data", default="world", help="world[:SEED] (stream samples and their twins) | "
                   "swaps[:SEED] (in-distribution SWAP items, seed 1000 by default)")
    f.add_argument("--n", type=int, default=20000, help="number of stream samples")
    f.add_argument("--out", required=True)
    f.add_argument("--device", default="cuda" if _cuda() else "cpu")
    f.add_argument("--quiet", action="store_true")
    f.set_defaults(fn=_features)

    r = sub.add_parser("run", help="run a plan: models x benchmarks x protocols (resumable)")
    r.add_argument("plan", help="a TOML plan file (see unbag/run.py)")
    r.add_argument("--out", default=None, help="overrides the plan's out")
    r.add_argument("--device", default="cuda" if _cuda() else "cpu")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(fn=_run)

    rp = sub.add_parser("report", help="HTML + Markdown report of results files")
    rp.add_argument("results", nargs="+", help="results JSON files, or run folders (OUT of unbag run)")
    rp.add_argument("--out", required=True, help="report folder")
    rp.add_argument("--title", default="unbag results")
    rp.add_argument("--explain-model", default="builtin", help="model for the SGI explanation images")
    rp.add_argument("--no-explain", action="store_true", help="no SGI explanation images")
    rp.set_defaults(fn=_report)

    n = sub.add_parser("negatives", help="write typed hard negatives in DeGLA's layout")
    n.add_argument("--data", default="world", help="world (stream samples) | csv:PATH | jsonl:PATH")
    n.add_argument("--types", default="reorder,swap_nouns,swap_adjectives,replace_adjectives,replace_nouns")
    n.add_argument("--k", type=int, default=4, help="negatives per caption")
    n.add_argument("--n", type=int, default=1000, help="world: number of stream samples")
    n.add_argument("--seed", type=int, default=0)
    n.add_argument("--generator", default="rules", help="rules | llm:MODEL_DIR (a local causal LM)")
    n.add_argument("--out", required=True, help="negatives.json")
    n.add_argument("--device", default="cuda" if _cuda() else "cpu")
    n.add_argument("--quiet", action="store_true")
    n.set_defaults(fn=_negatives)

    x = sub.add_parser("explain", help="draw which region each caption segment matches under SGI")
    x.add_argument("--model", default="builtin")
    x.add_argument("--image", default=None)
    x.add_argument("--caption", default=None)
    x.add_argument("--bench", default="ctrl", help="with --item: ctrl or ctrl:DIR")
    x.add_argument("--item", default=None, help="item id, e.g. ood-color-0003")
    x.add_argument("--seed", type=int, default=0)
    x.add_argument("--out", default="explain.png")
    x.add_argument("--device", default="cuda" if _cuda() else "cpu")
    _add_sgi_options(x)
    x.set_defaults(fn=_explain)
    return p


def _cuda() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.fn(args)
        from . import dist
        dist.finish()  # under torchrun: all ranks leave the process group together
    except UnbagError as e:
        print(f"unbag: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("unbag: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
