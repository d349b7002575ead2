"""Benchmark registry: a spec `NAME`, `NAME:DIR` or `NAME:DIR:IMAGE_ROOT` -> a loaded benchmark.

Each registered benchmark says how its spec reads, how it loads and how it is scored; the CLI's
help, `unbag run` and the tests read this table. To add a benchmark: write its loader (a module
next to this one) and register it here (CONTRIBUTING.md).
"""
from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import UnbagError
from .base import Benchmark, Item, image_key, load_image


@dataclass(frozen=True)
class Summary:
    """How a benchmark's results are summarised in reports and in `unbag run`'s printed tables: its
    table's columns (metric keys; a `*` stands for any subset name), the headline metric its chart
    draws (or several: the first a result has), display names for metric names (BiVLC calls the
    text score I2T), and the metric that joins the report's general-ability mean, if any."""
    columns: tuple[str, ...]
    chart: str | tuple[str, ...]
    names: dict = field(default_factory=dict)
    general: str | None = None

    def headline(self, metrics: set[str] | dict) -> str | None:
        """The chart's metric among `metrics`."""
        return next((k for k in ((self.chart,) if isinstance(self.chart, str) else self.chart) if k in metrics), None)

    def keys(self, metrics: set[str]) -> list[str]:
        """The columns present among `metrics`, patterns expanded in sorted order, each key once."""
        out: list[str] = []
        for pat in self.columns:
            if "*" not in pat:
                found = [pat] if pat in metrics else []
            else:
                rx = re.compile("^" + ".+".join(re.escape(p) for p in pat.split("*")) + "$")
                found = sorted(k for k in metrics if rx.match(k))
            out += [k for k in found if k not in out]
        return out

    def label(self, key: str) -> str:
        head, _, metric = key.rpartition("/")
        return f"{head}/{self.names.get(metric, metric)}" if head else self.names.get(metric, metric)


# every benchmark whose own declaration is missing (a Benchmark built in Python) is shown so
DEFAULT_SUMMARY = Summary(("macro/*", "all/*"), "")


@dataclass(frozen=True)
class Kind:
    """A registered benchmark."""
    form: str  # how its spec reads, for help and errors
    loader: Callable  # (path, third part or None, seed) -> Benchmark | RetrievalSet | ClassificationSet
    needs_dir: bool = True  # reads a local copy of an official release
    image_root: bool = False  # takes NAME:DIR:IMAGE_ROOT (annotations and images kept apart)
    dataset: bool = False  # takes NAME:DIR:DATASET (a standard dataset's name, for its built-in prompts)
    global_only: bool = False  # every image against every text (retrieval, classification)
    sgi: dict = field(default_factory=dict)  # SGI options its images call for, under the user's own
    summary: Summary | None = None  # its report table and chart; None: the report's ctrl table shows it


# Photographs: SGI's regions come from hierarchical grouping of segments (`selective`, eight boxes
# and the whole image), one view each; `blobs` (the default) are for scenes on a plain background.
# No unions: over eight boxes they would multiply the encoder passes (docs/sgi.md, "Photos").
PHOTO_SGI = {"regions": "selective", "phases": 1}


def _call(module: str, fn: str, *args: str) -> Callable:
    """A loader that imports `module` when first used and passes the spec parts named in `args`."""
    def load(path: str, third: str | None, seed: int):
        given = {"path": path, "image_root": third or None, "dataset": third or None, "seed": seed}
        return getattr(importlib.import_module(f".{module}", __name__), fn)(*(given[a] for a in args))
    return load


def _ctrl(path: str, image_root: str | None, seed: int):
    from . import ctrl
    return ctrl.load(path) if path else ctrl.generated(seed=seed)


def _ctrl_retrieval(path: str, image_root: str | None, seed: int):
    from .retrieval import ctrl_retrieval
    if path and not path.isdigit():
        raise UnbagError(f"ctrl-retrieval:{path}: the part after ':' is the number of scenes")
    return ctrl_retrieval(int(path) if path else 1000)


PAIRWISE = Summary(("macro/acc", "all/acc", "*/acc"), "macro/acc")
TWO_BY_TWO = Summary(("all/text", "all/image", "all/group"), "all/group")
RETRIEVAL = Summary(tuple(f"all/retrieval/{d}/R@{k}" for d in ("i2t", "t2i") for k in (1, 5, 10)),
                    "all/retrieval/i2t/R@1")
ZERO_SHOT = Summary(("all/zeroshot/top1", "all/zeroshot/top5", "all/zeroshot/mean_per_class_recall"),
                    "all/zeroshot/top1", general="all/zeroshot/top1")

BENCHMARKS: dict[str, Kind] = {
    "ctrl": Kind("ctrl (generated) | ctrl:DIR (built with `world build`)", _ctrl, needs_dir=False),
    "ctrl-retrieval": Kind("ctrl-retrieval[:N]", _ctrl_retrieval, needs_dir=False, global_only=True),
    "sugarcrepe": Kind("sugarcrepe:DIR[:IMAGE_ROOT]", _call("sugarcrepe", "load_sugarcrepe", "path", "image_root"),
                       image_root=True, sgi=PHOTO_SGI, summary=PAIRWISE),
    "sugarcrepe++": Kind("sugarcrepe++:DIR[:IMAGE_ROOT]",
                         _call("sugarcrepe", "load_sugarcrepe_pp", "path", "image_root"), image_root=True,
                         sgi=PHOTO_SGI, summary=Summary(("macro/itt", "macro/tot", "all/itt", "all/tot", "*/itt",
                                                         "*/tot"), "macro/itt", {"itt": "ITT", "tot": "TOT"})),
    "aro-vgr": Kind("aro-vgr:DIR", _call("aro", "load_vgr", "path"), sgi=PHOTO_SGI,
                    summary=Summary(("macro/acc", "all/acc"), "macro/acc")),
    "aro-vga": Kind("aro-vga:DIR", _call("aro", "load_vga", "path"), sgi=PHOTO_SGI,
                    summary=Summary(("macro/acc", "all/acc"), "macro/acc")),
    "aro-coco-order": Kind("aro-coco-order:DIR", _call("aro", "load_coco_order", "path", "seed"), sgi=PHOTO_SGI,
                           summary=Summary(("all/acc_official", "all/acc"), "all/acc_official")),
    "aro-flickr-order": Kind("aro-flickr-order:DIR", _call("aro", "load_flickr_order", "path", "seed"), sgi=PHOTO_SGI,
                             summary=Summary(("all/acc_official", "all/acc"), "all/acc_official")),
    "valse": Kind("valse:DIR[:IMAGE_ROOT]", _call("valse", "load", "path", "image_root"), image_root=True, sgi=PHOTO_SGI,
                  summary=Summary(("macro/acc", "all/acc", "*/acc"), "macro/acc")),
    "winoground": Kind("winoground:DIR", _call("winoground", "load", "path"), sgi=PHOTO_SGI, summary=TWO_BY_TWO),
    "bivlc": Kind("bivlc:DIR", _call("bivlc", "load", "path"), sgi=PHOTO_SGI,
                  summary=Summary(("all/text", "all/image", "all/group", "type=*/text", "type=*/image",
                                   "type=*/group"), "all/group", {"text": "I2T", "image": "T2I"})),
    "imagefolder": Kind("imagefolder:DIR[:DATASET]", _call("classification", "load", "path", "dataset"),
                        global_only=True, dataset=True, summary=ZERO_SHOT),
    "wds": Kind("wds:DIR[:DATASET] (CLIP_benchmark's webdataset: classification or retrieval)",
                _call("classification", "load_wds", "path", "dataset"), global_only=True, dataset=True,
                summary=Summary(ZERO_SHOT.columns + RETRIEVAL.columns, ("all/zeroshot/top1", "all/retrieval/i2t/R@1"),
                                general="all/zeroshot/top1")),
    "karpathy": Kind("karpathy:FILE[:IMAGE_ROOT]", _call("retrieval", "karpathy", "path", "image_root"),
                     image_root=True, global_only=True, summary=RETRIEVAL),
}


def kind(spec: str) -> Kind:
    """The registered benchmark a spec names."""
    name = spec.partition(":")[0]
    if name not in BENCHMARKS:
        raise UnbagError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)} (as NAME or NAME:DIR)")
    return BENCHMARKS[name]


def _parts(spec: str) -> tuple[Kind, str, str, str | None]:
    """(kind, name, path, third part: the image root or the dataset name) of a spec."""
    k = kind(spec)
    name, _, path = spec.partition(":")
    third = None
    if k.image_root or k.dataset:
        path, _, third = path.partition(":")
    return k, name, path, third or None


def load(spec: str, seed: int = 0):
    """Load the benchmark a spec names (`seed`: the world seed of generated ones). Its `spec` is
    the one given (image root included) and its `info` records the image root and the files'
    fingerprint (`files_fingerprint`)."""
    k, name, path, third = _parts(spec)
    image_root = third if k.image_root else None
    if k.needs_dir and not path:
        raise UnbagError(f"benchmark {name} reads a local copy of its official release: use {k.form} "
                         "(layouts in docs/benchmarks.md)")
    b = k.loader(path, third, seed)
    b.spec = spec
    for it in getattr(b, "items", ()):  # every loader checks its fields; this catches any it missed
        for j, c in enumerate(it.captions):
            if not isinstance(c, str) or not c.strip():
                raise UnbagError(f"{it.source or it.id}: caption {j} is empty ({c!r})")
    if image_root:
        b.info["image_root"] = str(Path(image_root).resolve())
    b.info["files"] = files_fingerprint(spec)
    return b


ANNOTATIONS = {".json", ".jsonl", ".csv", ".tsv", ".txt", ".parquet", ".toml"}


def files_fingerprint(spec: str) -> str | None:
    """A hash of the files a spec reads (None for generated benchmarks): annotation files by
    content, other files (images) by path, size and modification time, so that an edited caption,
    a replaced image or another folder changes it."""
    k, _, path, third = _parts(spec)
    image_root = third if k.image_root else None
    if not path or (not k.needs_dir and path.isdigit()):
        return None
    h = hashlib.sha256()
    for root in (Path(path), Path(image_root) if image_root else None):
        if root is None:
            continue
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root] if root.exists() else []
        h.update(f"{root.resolve()}\0{len(files)}\0".encode())
        for f in files:
            st = f.stat()
            h.update(f"{f.relative_to(root) if root.is_dir() else f.name}\0{st.st_size}\0".encode())
            if f.suffix.lower() in ANNOTATIONS:
                with open(f, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
            else:
                h.update(str(st.st_mtime_ns).encode())
    return h.hexdigest()


def summary(name: str) -> Summary | None:
    """How results of a benchmark (by the name its results record) are summarised; None for the
    ones the report's ctrl table shows."""
    k = BENCHMARKS.get(name)
    return k.summary if k else DEFAULT_SUMMARY


def sgi_defaults(name: str) -> dict:
    """The SGI options a benchmark (name or spec) declares for its images; {} for unregistered ones."""
    k = BENCHMARKS.get(name.partition(":")[0])
    return dict(k.sgi) if k else {}


def forms() -> str:
    """Every registered spec form, for help texts."""
    return " | ".join(k.form for k in BENCHMARKS.values())


__all__ = ["Benchmark", "Item", "Kind", "image_key", "load_image", "load", "kind", "forms", "sgi_defaults", "files_fingerprint", "summary", "Summary",
           "BENCHMARKS", "PHOTO_SGI"]
