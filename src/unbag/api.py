"""unbag's Python API (docs/api.md): the functions the CLI commands stand on, with keyword options.

Nothing here prints, configures logging or changes torch's threads; progress bars appear only
with `progress=True`. Every function raises `unbag.UnbagError` with a message that names the
argument, option, file or field at fault.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Union

import numpy as np

from .cache import JobCache
from .errors import UnbagError
from .utils import at_least, check_out

if TYPE_CHECKING:
    import torch
    from PIL import Image

    from .benchmarks.base import Benchmark
    from .models.base import Backend
    from .sgi.explain import Explanation

# a file path, a PIL image, pixels [H, W, 3] uint8, or an image file's bytes
ImageInput = Union[str, os.PathLike, "Image.Image", np.ndarray, bytes]


def default_device() -> str:
    """'cuda' when torch sees a GPU, else 'cpu' (what the CLI uses when --device is not given)."""
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model(spec: str = "builtin", device: str | None = None) -> "Backend":
    """The model a spec names (any spec `unbag eval --model` takes), in eval mode on `device`."""
    from . import models
    return models.load(spec, device=device or default_device())


def load_benchmark(spec: str = "ctrl", seed: int = 0, per_category: int | None = None,
                   style: str | None = None) -> "Benchmark":
    """A benchmark by spec (any `unbag eval --bench`); iterate it for its items. `per_category`
    sizes the generated `ctrl` (items per category and split; default 400) and `style` picks its
    world (None: the default, `3d`; or `flat`: world/styles.py)."""
    from . import benchmarks
    return benchmarks.load(spec, seed=seed, per_category=per_category, style=style)


def _backend(model: "str | Backend", device: str | None = None) -> "Backend":
    from .models.base import Backend
    if isinstance(model, Backend):
        return model
    if isinstance(model, str):
        return load_model(model, device)
    raise UnbagError("model: expected a model spec string or a model from unbag.load_model, "
                     f"got {type(model).__name__}")


def _image_refs(images: Any, arg: str = "images") -> list:
    """Image references the benchmarks' loaders take, from paths, PIL images, uint8 arrays or an
    encoded image file's bytes (PNG, JPEG...: what a generated 3D benchmark's items hold)."""
    from PIL import Image
    if isinstance(images, (str, os.PathLike, Image.Image, bytes)) or (isinstance(images, np.ndarray) and images.ndim == 3):
        images = [images]
    refs = []
    for k, im in enumerate(images):
        if isinstance(im, (str, os.PathLike)):
            refs.append(str(im))
        elif isinstance(im, Image.Image):
            refs.append(np.asarray(im.convert("RGB")).copy())
        elif isinstance(im, np.ndarray):
            if im.dtype != np.uint8 or im.ndim != 3 or im.shape[2] != 3:
                raise UnbagError(f"{arg}[{k}]: an array must be H x W x 3 uint8 RGB pixels, got shape "
                                 f"{tuple(im.shape)} and dtype {im.dtype}")
            refs.append(np.ascontiguousarray(im))
        elif isinstance(im, bytes):
            from .benchmarks.base import load_image
            refs.append(np.asarray(load_image(im, f"{arg}[{k}]")).copy())  # decoded now: a bad file fails here
        else:
            raise UnbagError(f"{arg}[{k}]: expected a file path, a PIL image, an H x W x 3 uint8 array or an "
                             "image file's bytes, "
                             f"got {type(im).__name__}")
    if not refs:
        raise UnbagError(f"{arg} is empty: give at least one image")
    return refs


def _captions(captions: Any, arg: str = "captions") -> list[str]:
    captions = [captions] if isinstance(captions, str) else list(captions)
    if not captions:
        raise UnbagError(f"{arg} is empty: give at least one caption")
    for k, c in enumerate(captions):
        if not isinstance(c, str) or not c.strip():
            raise UnbagError(f"{arg}[{k}]: expected a non-empty string, got {c!r}")
    return captions


def _paths_in(spec: str) -> list[str]:
    """The existing files or folders a model or data spec names (`PATH`, `PREFIX:PATH`,
    `PREFIX:PATH:IMAGE_DIR`): an output may not replace them."""
    return [p for p in dict.fromkeys([spec, *spec.split(":")[1:]]) if p and os.path.exists(p)]


def _pairs(images: Any, captions: Any, name: str) -> "Benchmark":
    """Every image against every caption, as one benchmark item."""
    from .benchmarks.base import Benchmark, Item
    item = Item(name, _image_refs(images), _captions(captions), {}, source=name)
    return Benchmark(name, name, [item], pictures="photos")  # a user's own pictures: SGI's photo defaults


def score(model: "str | Backend", images: Sequence[ImageInput] | ImageInput, captions: Sequence[str] | str,
          protocol: str = "global", *, batch_size: int = 256, progress: bool = False,
          cache: JobCache | None = None, **options: Any) -> "torch.Tensor":
    """Scores [len(images), len(captions)] of every image against every caption under `protocol`
    (`global`, `sgi`, `sgi:paper`, `head:PATH`, `head:builtin:KIND`); SGI options as keywords;
    `cache` as in `evaluate`."""
    from . import protocols
    backend = _backend(model)
    protocol = protocols.resolve(protocol, backend.spec)
    at_least("batch_size", batch_size)
    bench = _pairs(images, captions, "unbag.score")
    fn, _ = protocols.build(protocol, options, bench, cache=cache)  # the options `explain` draws with
    from .evaluation import finite
    return finite(fn(backend, bench, batch_size=batch_size, progress=progress)[0], backend.spec, "unbag.score")


def evaluate(model: "str | Backend", bench: "str | Benchmark", protocol: str = "global", *,
             out: str | os.PathLike | None = None, batch_size: int = 256, device: str | None = None,
             seed: int = 0, progress: bool = False, precision: str = "auto", cache: JobCache | None = None,
             overwrite: bool = False, images_outside_root: bool = False, **options: Any) -> dict:
    """The results dict `unbag eval` writes (metrics, ties, counts, config, timings...); with
    `out`, also the results JSON and per-item JSONL, written as one unit (a file there that unbag
    did not write is refused unless `overwrite`). `model` and `bench` may be loaded already.
    `images_outside_root`: read a benchmark's images where its file points even outside its folder
    and image root (refused otherwise; recorded in the results).
    `precision`: auto (bf16 on CUDA, fp32 elsewhere) | fp32 | bf16 | fp16, recorded in the results.
    `cache`: a `JobCache` shared by calls that score the same images (SGI's regions, heads'
    features); each call makes its own when None, and nothing outlives the object."""
    from .evaluation import evaluate as run
    if not isinstance(model, str):
        model = _backend(model)
    return run(model, bench, protocol, out=str(out) if out else None, batch_size=batch_size,
               device=device or default_device(), seed=seed, progress=progress, options=options, precision=precision,
               cache=cache, overwrite=overwrite, images_outside_root=images_outside_root)


def explain(model: "str | Backend", image: Sequence[ImageInput] | ImageInput | None = None,
            caption: Sequence[str] | str | None = None, protocol: str = "sgi", *, bench: str | None = None,
            item: str | None = None, seed: int = 0, device: str | None = None, **options: Any) -> "Explanation":
    """Which region each caption segment chose under an SGI protocol: `.image` (PIL drawing),
    `.rows` (segment, kind, region, cosine), `.scores` [images, captions], `.table()`, `.save(png)`.
    Of free `image` and `caption`, or of one `item` (by id) of `bench` (a spec; `seed` of a
    generated one). A free image takes the photo benchmarks' regions (`selective`, one view), as
    `unbag eval` on photos does, a benchmark item its benchmark's; SGI options override them."""
    from . import benchmarks
    from .sgi.explain import explain as draw
    from .sgi.presets import SGI_PRESETS, config_for
    if protocol not in SGI_PRESETS:
        raise UnbagError(f"explain draws SGI matches: protocol must be one of {', '.join(SGI_PRESETS)}, "
                         f"got {protocol!r}")
    if (bench is None) != (item is None) or (item is None) == (image is None or caption is None):
        raise UnbagError("explain needs image and caption, or bench and item")
    given = {k: v for k, v in options.items() if v is not None}
    if item is not None:
        b = benchmarks.load_item(bench, item, seed=seed)
        cfg = config_for(protocol, given, b)  # exactly what `unbag eval` scores the item with
    else:
        b = _pairs(image, caption, "unbag.explain")
        cfg = config_for(protocol, given, b)  # the same place `score` takes them from
    return draw(_backend(model, device), b, cfg)


def features(model: "str | Backend", data: str, out: str | os.PathLike, *, n: int = 20000,
             seed: int | None = None, device: str | None = None, progress: bool = False, regions: bool = True,
             overwrite: bool = False) -> Path:
    """Cache frozen features for head training; the cache folder. `data`: a world stream or pool
    as the trainer reads it (`world[@WORLD][:DIST]`, `pool:DIR`:
    samples and their twins; seed 1 by default), `swaps[@WORLD]`
    (in-distribution SWAP items of the default world or the one named; seed 1000 by default), or caption
    data as the trainer reads it (`csv:`, `jsonl:`, `wds:`, `degla:`; photos with captions such as
    COCO), each caption with a hard negative. `regions=False`: no region features (TFRegions needs
    them; on photos they cost SGI's region search per image). A folder `out` that holds files unbag
    did not write is refused unless `overwrite`."""
    from .heads.extract import extract
    check_out(out, "features", overwrite, inputs=_paths_in(data) + (_paths_in(model) if isinstance(model, str) else []))
    return extract(lambda: _backend(model, device), out, data, n=n, seed=seed, regions=regions, progress=progress,
                   overwrite=overwrite)


def export(model: "str | Backend", out: str | os.PathLike, *, device: str | None = "cpu",
           overwrite: bool = False) -> Path:
    """Write `model` as a plain folder of its library: open_clip's local-dir layout
    (`open_clip.create_model_and_transforms("local-dir:OUT")`; the built-in model's packed weights
    unpacked) or a transformers folder; `unbag.load_model(OUT)` loads it back. A model with unbag's
    convolutional stem or token pooling (models/stem.py, models/token_pool.py) is written in
    open_clip's layout, but only unbag builds it."""
    check_out(out, "model", overwrite, inputs=_paths_in(model) if isinstance(model, str) else [])
    return _backend(model, device).save(out, overwrite=overwrite)


def train(method: str, model: "str | None" = None, data: str | os.PathLike = "world",
          out: str | os.PathLike | None = None, *, resume: bool = False, progress: bool = False,
          overwrite: bool = False, **hyperparameters: Any) -> Path:
    """Train `method` (an objective: clip, ft, negclip, clic, degla, ce-clip, fsc-clip, tripletclip,
    ...; or a head: tflocal, tflocal-li, tfglobal, tfregions on a feature cache DIR as `data`) and
    return the folder of the trained model or head. Hyperparameters are the CLI's flags as keywords
    (e.g. steps=600, lr=1e-4, a method's own options such as imc_form="released"); unset ones take
    the method's defaults. `resume=True` continues an interrupted run from OUT/ckpt. A folder `out`
    that holds files unbag did not write is refused unless `overwrite`."""
    from .heads import HEADS
    if not out:
        raise UnbagError("train: give `out`, the folder the run writes")
    hp = {k: v for k, v in hyperparameters.items() if v is not None}
    data = str(data)
    if method not in HEADS and "hard_negatives" in hp:
        raise UnbagError("--no-hard-negatives (hard_negatives) is for the heads; the trainer's methods choose "
                         "their own negatives")
    if method in HEADS:
        if resume:
            raise UnbagError("heads train in one go from their feature cache; resume applies to the methods")
        check_out(out, "train", overwrite)
        return _train_head(method, model, data, Path(out), progress, hp, overwrite)
    from .training.engine import TrainConfig, Trainer, check_run_out
    if os.environ.get("RANK", "0") == "0":  # before the model loads; under torchrun rank 0 checks
        check_run_out(out, resume, overwrite)
    cfg = TrainConfig.for_method(method, model=model or "open_clip:unbag-tiny@random", data=data,
                                 **{"device": default_device(), **hp})
    return Path(Trainer(cfg, out).fit(resume=resume, progress=progress, overwrite=overwrite))


def _train_head(method: str, model: str | None, data: str, out: Path, progress: bool, hp: dict,
                overwrite: bool) -> Path:
    from .heads.train import head_config, train_head
    cfg = head_config(method, hp)
    if model is not None:
        from .heads.cache import FeatureCache
        FeatureCache(data, _backend(model, "cpu"))  # refuses a cache made with other weights
    return Path(train_head(data, cfg, out, progress=progress, overwrite=overwrite))


def compare(a: str | os.PathLike, b: str | os.PathLike, *, metric: str | None = None) -> dict:
    """Two results files on the same items compared item by item: the difference with its paired-bootstrap
    interval, an exact McNemar p-value for right/wrong metrics, the items each gets right that the other misses."""
    from .reports.compare import compare as paired
    return paired(a, b, metric=metric)


def report(results: Sequence[str | os.PathLike], out: str | os.PathLike, *, format: str = "html",
           title: str = "unbag results", intervals: bool = False, baseline: str | None = "global",
           overwrite: bool = False) -> Path:
    """Write a report of results files and run folders: `html` (a folder with index.html and
    report.md; `title`), `latex` (one file of booktabs tables; `intervals`: ± each number's
    half-width) or `csv` (one tidy file); the path written. `baseline`: the protocol each grid row
    is compared with, paired over the same items (None: no such column)."""
    if format == "html":
        from .reports.html import write_report
        return write_report(list(results), out, title=title, overwrite=overwrite, baseline=baseline)
    if format not in ("latex", "csv"):
        raise UnbagError(f"report format {format!r}: expected html, latex or csv")
    from .reports.export import write_tables
    return write_tables(list(results), out, format, intervals, overwrite, baseline)


def run(plan: str | os.PathLike, out: str | os.PathLike | None = None, *, device: str | None = None,
        progress: bool = False) -> list[dict]:
    """Run a plan file (docs/plans.md): every unfinished cell of its models x benchmarks x
    protocols, training what it trains first; every cell's results dict. `out` overrides the
    plan's; a rerun reuses every cell whose inputs are unchanged."""
    from .runner import run_plan
    return run_plan(plan, str(out) if out else None, progress=progress, device=device or default_device())


def run_paper(model: str, coco: str, out: str | os.PathLike = "runs/paper", *, sugarcrepe: str | None = None,
              bivlc: str | None = None, per_category: int | None = None, steps: int | None = None,
              batch_size: int | None = None, n: int | None = None, device: str | None = None,
              progress: bool = False) -> tuple[list[dict], Path]:
    """The SGI / TFLocal paper's experiment (arXiv 2604.11496) on `model`, trained on COCO
    (`coco`: ANNOTATIONS:IMAGES), with SugarCrepe (DIR[:IMAGE_ROOT]) and BiVLC (DIR) when given;
    `steps`, `batch_size` and `n` override every training table's (a quick check). The cells'
    results and the report folder written in OUT/report."""
    import tempfile

    from .reports.html import write_report
    from .runner import paper_plan, run_plan
    if not model or not coco:
        raise UnbagError("the paper's plan needs a model spec and COCO's captions file and images "
                         "(ANNOTATIONS:IMAGES)")
    text = paper_plan(model, coco, sugarcrepe, bivlc, per_category, steps, batch_size, n)
    with tempfile.TemporaryDirectory() as d:
        plan = Path(d) / "paper.toml"
        plan.write_text(text)
        results = run_plan(plan, str(out), progress=progress, device=device or default_device())
    return results, write_report([out], Path(out) / "report", title=f"the paper's experiment on {model}")


def demo(out: str | os.PathLike = "unbag-demo", *, progress: bool = False) -> tuple[list[dict], Path]:
    """The main job (the packaged plan plans/demo.toml): the shipped built-in models x protocols on
    ctrl, plus the report; the cells' results and the report folder."""
    from .reports.html import write_report
    from .runner import PLANS, run_plan
    results = run_plan(PLANS / "demo.toml", str(out), progress=progress)
    return results, write_report([out], Path(out) / "report", title="unbag demo: binding, ID and OOD")


@dataclass
class SuiteRun:
    """What `suite` scored and what it could not: the cells' results, the suite folders absent
    from the root (with why), the benchmarks found (name -> spec), those that could not be read
    (name -> why), the cells a protocol cannot score (benchmark, protocol, why) and the report."""
    results: list[dict]
    missing: dict[str, str]
    found: dict[str, str]
    failed: dict[str, str]
    not_applicable: list[tuple[str, str, str]]
    report: Path | None


def suite(model: str, root: str | os.PathLike, protocols: Sequence[str] | None = None,
          out: str | os.PathLike = "unbag-suite", *, device: str | None = None, precision: str = "auto",
          images_outside_root: bool = False, all_items: bool = False, progress: bool = False) -> SuiteRun:
    """Score every compositionality benchmark found under `root` (ROOT/NAME/, image roots in
    ROOT/suite.toml; docs/benchmarks.md) with each protocol (None: global), into the run folder `out` (a rerun
    reuses finished cells), and write its report in OUT/report. A benchmark that cannot be read is
    named in `failed` and the suite goes on. `all_items`: also the readings shown beside the suite
    (VL-CheckList's every item). Under torchrun only rank 0 gets results and writes the report."""
    from . import dist
    from .reports.html import write_report
    from .suite_root import absent, not_applicable, run_suite
    protocols = list(protocols or ["global"])
    failed: dict[str, str] = {}
    results, missing, found = run_suite(model, root, protocols, out, progress=progress,
                                        device=device or default_device(), precision=precision,
                                        outside=images_outside_root, all_items=all_items, failed=failed)
    report = write_report([out], Path(out) / "report", title="unbag suite") if dist.rank() == 0 else None
    return SuiteRun(results, {f: absent(root, f) for f in missing}, found, failed,
                    not_applicable(found, protocols), report)


def build_world(out: str | os.PathLike, *, seed: int = 0, per_category: int = 400, px: int | None = None,
                categories: Sequence[str] | None = None, style: str | None = None, procs: int = 1,
                device: str | None = None, progress: bool = False, overwrite: bool = False) -> Path:
    """Write a ctrl benchmark to `out` (docs/ctrl-format.md) in the world `style` (None: the
    default) at `px` (None: the world's size); a folder built from the same recipe is kept unless
    `overwrite`."""
    from .world.io import build
    return build(out, seed=seed, per_category=per_category, px=px, categories=list(categories) if categories else None,
                 progress=progress, overwrite=overwrite, style=style, procs=procs, device=device)


def build_pool(out: str | os.PathLike, data: str = "world@3d:finetuning", *, seed: int = 0, n: int = 4096,
               px: int | None = None, procs: int = 1, progress: bool = False, overwrite: bool = False) -> Path:
    """Render samples 0..n-1 of a 3D training stream and their twins once, for `data="pool:OUT"`."""
    from .world.pool3d import PX_3D, build_pool as build
    return build(out, data=data, seed=seed, n=n, px=px or PX_3D, procs=procs, progress=progress, overwrite=overwrite)


def contact_sheet(out: str | os.PathLike, bench: str = "ctrl", *, n: int = 2, seed: int = 0,
                  style: str | None = None, overwrite: bool = False) -> Path:
    """Draw a labelled contact sheet of `n` SWAP items per split x category (a PNG file)."""
    from .reports.sheet import contact_sheet as draw
    return draw(out, bench=bench, n=n, seed=seed, style=style, overwrite=overwrite)


def make_negatives(data: str, out: str | os.PathLike, *, types: Sequence[str] | None = None, k: int = 4, n: int = 1000,
              seed: int = 0, generator: str = "rules", device: str | None = None, progress: bool = False,
              overwrite: bool = False) -> Path:
    """Write `k` typed hard negatives per caption of `data` (a world stream, `csv:` or `jsonl:`)
    in DeGLA's layout, with OUT.meta.json saying how they were made. `generator`: `rules` or
    `llm:MODEL_DIR` (a local causal LM)."""
    from .negatives.export import TYPES, export
    return export(data, out, TYPES if types is None else tuple(types), k, n, seed, generator, device or default_device(),
                  progress=progress, overwrite=overwrite)
