"""Built-in class names and templates for the standard zero-shot classification datasets.

ImageNet-1k: open_clip's `IMAGENET_CLASSNAMES` and `OPENAI_IMAGENET_TEMPLATES` (OpenAI's CLIP
release). The other datasets DeGLA and CLIP_benchmark report (CIFAR-10/100, Food-101, Pets,
Flowers, Cars, Aircraft, DTD, SUN397, Caltech-101, EuroSAT, STL-10, GTSRB, MNIST, ...): OpenAI's
per-dataset prompts (CLIP, arXiv 2103.00020, its data/prompts.md), as LAION's CLIP_benchmark
packages them (`clip_benchmark/datasets/en_classnames.json`, `en_zeroshot_classification_templates.json`).
unbag reads those two files from an installed clip_benchmark without importing it
(`pip install 'unbag[clip-benchmark]'`, or `pip install --no-deps clip_benchmark` for the files
alone), so the prompts are CLIP_benchmark's own, never a copy that could drift.

A dataset is named by the spec's third part (`wds:DIR:cifar10`) or, failing that, by its folder's
name the way CLIP_benchmark's releases name them (`wds_cifar10`, `wds_vtab-caltech101`, `cifar10`).
"""
from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from ..errors import UnbagError

# other spellings users give a dataset -> CLIP_benchmark's key
ALIASES = {"imagenet": "imagenet1k", "imagenet-1k": "imagenet1k", "ilsvrc2012": "imagenet1k",
           "cifar-10": "cifar10", "cifar-100": "cifar100", "food-101": "food101", "oxford_pets": "pets",
           "oxford-iiit-pet": "pets", "flowers102": "flowers", "flowers-102": "flowers", "stanford_cars": "cars",
           "aircraft": "fgvc_aircraft", "fgvc-aircraft": "fgvc_aircraft", "caltech-101": "caltech101"}


def _clip_benchmark_dir() -> Path | None:
    # find_spec of a top-level package locates it without running its __init__
    spec = importlib.util.find_spec("clip_benchmark")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(next(iter(spec.submodule_search_locations))) / "datasets"
    return d if (d / "en_zeroshot_classification_templates.json").is_file() else None


@lru_cache(maxsize=None)
def _clip_benchmark_files() -> tuple[dict, dict, str] | None:
    d = _clip_benchmark_dir()
    if d is None:
        return None
    names = json.loads((d / "en_classnames.json").read_text())
    templates = json.loads((d / "en_zeroshot_classification_templates.json").read_text())
    return names, templates, str(d)


def _imagenet() -> tuple[list[str], list[str]]:
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES, OPENAI_IMAGENET_TEMPLATES
    return list(IMAGENET_CLASSNAMES), [t("{c}") for t in OPENAI_IMAGENET_TEMPLATES]


def keys(dataset: str) -> list[str]:
    """The keys to look a dataset name up under, CLIP_benchmark's way: `vtab/x` then `x`."""
    d = dataset.strip().lower()
    d = d[4:] if d.startswith("wds_") else d
    d = d.replace("vtab-", "vtab/", 1).replace("tfds-", "tfds/", 1)
    out = [d] + ([d.split("/", 1)[1]] if "/" in d else [])
    return [ALIASES.get(k, k) for k in out]


def known(dataset: str) -> bool:
    """Whether unbag knows built-in prompts for `dataset` (clip_benchmark's files installed or not)."""
    return any(k == "imagenet1k" or k in KNOWN for k in keys(dataset))


# the datasets of CLIP_benchmark 1.6.2's templates file (its names), so a folder is recognised
# and its missing prompts reported even where clip_benchmark is not installed
KNOWN = frozenset("cifar10 cifar100 imagenet1k food101 sun397 cars fgvc_aircraft dtd pets caltech101 flowers "
                  "mnist stl10 eurosat gtsrb country211 renderedsst2 voc2007 fer2013 clevr_count_all "
                  "clevr_closest_object_distance pcam svhn resisc45 kitti_closest_vehicle_distance "
                  "smallnorb_label_azimuth smallnorb_label_elevation dsprites_label_x_position "
                  "dsprites_label_orientation dmlab diabetic_retinopathy".split())


def builtin(dataset: str) -> tuple[list[str] | None, list[str] | None, str]:
    """(class names or None, templates or None, where they came from) for a standard dataset;
    UnbagError when its prompts live in clip_benchmark's files and it is not installed."""
    ks = keys(dataset)
    if "imagenet1k" in ks:
        names, templates = _imagenet()
        return names, templates, "open_clip.zero_shot_metadata (OpenAI's ImageNet-1k names, 80 templates)"
    files = _clip_benchmark_files()
    if files is None:
        raise UnbagError(f"dataset {dataset!r}: its built-in prompts (OpenAI's, as CLIP_benchmark packages them) are "
                         "read from clip_benchmark's data files: pip install --no-deps clip_benchmark (or "
                         "'unbag[clip-benchmark]'), or put classnames.txt and zeroshot_classification_templates.txt "
                         "beside the data")
    names, templates, where = files
    name = next((names[k] for k in ks if k in names), None)
    tmpl = next((templates[k] for k in ks if k in templates), None)
    if name is None and tmpl is None:
        raise UnbagError(f"dataset {dataset!r}: not among clip_benchmark's datasets ({', '.join(sorted(templates))})")
    return name, tmpl, f"clip_benchmark ({where}) for {ks[-1]}"
