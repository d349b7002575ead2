"""unbag's Python API (docs/api.md): the functions the CLI commands stand on, with keyword options.

Nothing here prints, configures logging or changes torch's threads; progress bars appear only
with `progress=True`. Every function raises `unbag.UnbagError` with a message that names the
argument, option, file or field at fault.
"""
from __future__ import annotations

import os
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
    """Train `method` (clip, ft, negclip, clic, degla; or a head: tflocal, tflocal-li, tfglobal,
    tfregions on a feature cache DIR as `data`) and return the folder of the trained model or head.
    Hyperparameters are the CLI's flags as keywords (e.g. steps=600, lr=1e-4); unset ones take the
    method's defaults. `resume=True` continues an interrupted run from OUT/ckpt. A folder `out`
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
