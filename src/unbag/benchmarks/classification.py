"""Zero-shot classification (general ability) in the layouts CLIP_benchmark's users hold.

imagefolder:DIR[:DATASET]
                  torchvision's ImageFolder: DIR/<class>/**/<image> (nested folders followed,
                  torchvision's extensions: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp); an
                  empty class folder is refused, as torchvision refuses it.
wds:DIR[:DATASET] CLIP_benchmark's webdataset: DIR/test/nshards.txt and DIR/test/{0..N-1}.tar
                  (an image .webp/.png/.jpg/.jpeg and its label .cls per sample), DIR/classnames.txt,
                  DIR/zeroshot_classification_templates.txt. With DIR/dataset_type.txt saying
                  `retrieval` it is a retrieval set (.txt: one caption per line) (retrieval.py).

DATASET names a standard dataset (cifar10, imagenet1k, vtab/eurosat, ...) for its built-in prompts
(prompts.py); without it the folder's own name is tried (`wds_cifar10`, `wds_vtab-dtd`).
Class names: DIR/classnames.txt (one per line, in class order); else the standard dataset's, by
label, when the class folders are its label numbers or ImageNet's 1,000 WordNet ids; else the
folder names with '_' as spaces. Templates: DIR/zeroshot_classification_templates.txt
(CLIP_benchmark's name) or DIR/templates.txt, one per line with `{c}` or `{}` for the class name,
win over the defaults; the defaults are the standard dataset's own (OpenAI's), else OpenAI's 7
curated ImageNet templates (the ensemble of CLIP's prompt-engineering notebook, arXiv
2103.00020). (CLIP_benchmark falls back to the 80 ImageNet templates instead.)
"""
from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UnbagError, warn
from ..utils import read_text, walk_files
from . import prompts
from .kinds import RETRIEVAL, ZERO_SHOT, Kind, Summary
from .webdataset import wds_image, wds_samples

# torchvision.datasets.folder.IMG_EXTENSIONS
IMAGE_EXT = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
# OpenAI's 7 curated ImageNet templates (CLIP's Prompt_Engineering_for_ImageNet notebook)
TEMPLATES = ("itap of a {}.", "a bad photo of the {}.", "a origami {}.", "a photo of the large {}.",
             "a {} in a video game.", "art of the {}.", "a photo of the small {}.")
TEMPLATE_FILES = ("zeroshot_classification_templates.txt", "templates.txt")
WNID = re.compile(r"^n\d{8}$")


@dataclass
class ClassificationSet:
    name: str
    spec: str
    images: list  # image refs: paths or encoded bytes
    labels: list[int]
    classes: list[str]
    templates: tuple[str, ...]
    info: dict = field(default_factory=dict)
    image_size: int | None = None

    def prompts(self) -> list[str]:
        """Every class name in every template, class after class."""
        return [prompt(t, c) for c in self.classes for t in self.templates]


def prompt(template: str, name: str) -> str:
    """A template (`{c}` or `{}` for the class name, `{{ }}` for literal braces) filled in."""
    return template.format(name, c=name)


def check_template(template: str, where: str) -> str:
    """Refuse a template that is not one class-name slot (`{c}` or `{}`) in literal text."""
    try:
        slots = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise UnbagError(f"{where}: template {template!r}: {e} (write literal braces as '{{{{' and '}}}}')") from None
    if len(slots) != 1 or slots[0][0] not in ("", "c") or slots[0][1] or slots[0][2]:
        raise UnbagError(f"{where}: template {template!r} must hold exactly one '{{c}}' or '{{}}' for the class "
                         "name (literal braces as '{{' and '}}')")
    return template


def _lines(path: Path) -> list[tuple[int, str]]:
    return [(n, ln.strip()) for n, ln in enumerate(read_text(path).splitlines(), 1) if ln.strip()]


def dataset_of(root: Path, dataset: str | None) -> str | None:
    """The standard dataset a folder holds: the one named, else the one its folder's name is."""
    if dataset:
        if not prompts.known(dataset):
            raise UnbagError(f"dataset {dataset!r}: unknown; known: imagenet1k, {', '.join(sorted(prompts.KNOWN - {'imagenet1k'}))}")
        return dataset
    return root.name if prompts.known(root.name) else None


def names_and_templates(root: Path, folders: list[str], dataset: str | None = None) -> tuple[list[str], tuple[str, ...], dict]:
    """Class names and templates for classes `folders` (in class order), and where they came from.

    Names: DIR/classnames.txt; else the standard dataset's own, by label when the folders are its
    label numbers or ImageNet's WordNet ids; else the folder names with '_' as spaces. Templates:
    the file beside the data; else the standard dataset's own; else OpenAI's 7 curated ones."""
    named = dataset_of(root, dataset)
    wnids = len(folders) == 1000 and all(WNID.match(f) for f in folders)
    if named is None and wnids:
        named = "imagenet1k"
    b_names = b_templates = None
    b_source = ""
    if named is not None:
        try:
            b_names, b_templates, b_source = prompts.builtin(named)
        except UnbagError as e:
            if dataset:  # asked for by name: its prompts must be there
                raise
            warn(f"{root}: {e}; using the defaults")
    names, source = [f.replace("_", " ") for f in folders], "folder names"
    if (root / "classnames.txt").is_file():
        names, source = [x for _, x in _lines(root / "classnames.txt")], "classnames.txt"
        if len(names) != len(folders):
            raise UnbagError(f"{root / 'classnames.txt'}: {len(names)} names for {len(folders)} classes")
    elif b_names is not None and (wnids or all(f.isdigit() and int(f) < len(b_names) for f in folders)):
        # ImageNet's WordNet ids sort into its label order; numbered folders name their label
        names = b_names if wnids else [b_names[int(f)] for f in folders]
        source = b_source
    elif all(f.isdigit() for f in folders):
        warn(f"{root}: the classes are folder numbers and no class names were found (classnames.txt, or a "
             "standard dataset named as imagefolder:DIR:DATASET): prompts will name the numbers")
    file = next((root / f for f in TEMPLATE_FILES if (root / f).is_file()), None)
    if file is not None:
        templates = tuple(check_template(t, f"{file}:{n}") for n, t in _lines(file))
        if not templates:
            raise UnbagError(f"{file}: no templates")
        tsource = file.name
    elif b_templates is not None:
        templates, tsource = tuple(check_template(t, f"{named} (built in)") for t in b_templates), b_source
    else:
        templates, tsource = TEMPLATES, "OpenAI's 7 curated ImageNet templates"
    info = {"classnames_from": source, "templates_from": tsource}
    return names, templates, {"dataset": named, **info} if named else info


def load(root: str | Path, dataset: str | None = None):
    """imagefolder:DIR[:DATASET], with torchvision's ImageFolder rules (a CLIP_benchmark webdataset
    folder is recognised and read as wds:DIR)."""
    root = Path(root)
    if (root / "test" / "nshards.txt").is_file():
        return load_wds(root, dataset)
    folders = sorted(e.name for e in os.scandir(root) if e.is_dir()) if root.is_dir() else []
    if not folders:
        raise UnbagError(f"{root}: no class folders (expected DIR/<class>/<images>)")
    names, templates, info = names_and_templates(root, folders, dataset)
    images, labels = [], []
    for c, f in enumerate(folders):
        # links followed as torchvision's ImageFolder does, but each real folder once: a link that
        # loops back would otherwise count the same images again, level after level
        found = [str(p) for p in walk_files(root / f) if p.name.lower().endswith(IMAGE_EXT)]
        if not found:
            raise UnbagError(f"{root / f}: class folder with no image ({', '.join(IMAGE_EXT)}); remove it or add "
                             "images (torchvision's ImageFolder refuses it too)")
        images += found
        labels += [c] * len(found)
    return ClassificationSet("imagefolder", f"imagefolder:{root}", images, labels, names, templates,
                             {"classes": len(names), "images": len(images), "templates": len(templates), **info})


def load_wds(root: str | Path, dataset: str | None = None):
    """wds:DIR[:DATASET]: CLIP_benchmark's webdataset layout (classification, or retrieval per
    dataset_type.txt)."""
    root = Path(root)
    kind = read_text(root / "dataset_type.txt").strip().lower() if (root / "dataset_type.txt").is_file() \
        else "classification"
    if kind == "retrieval":
        from .retrieval import load_wds_retrieval
        return load_wds_retrieval(root)
    if kind != "classification":
        raise UnbagError(f"{root / 'dataset_type.txt'}: dataset type {kind!r} is not read (classification, retrieval)")
    standard = dataset_of(root, dataset)
    if (root / "classnames.txt").is_file():
        n = len(_lines(root / "classnames.txt"))
    elif standard is not None and (found := prompts.builtin(standard)[0]) is not None:
        n = len(found)
    else:
        raise UnbagError(f"{root / 'classnames.txt'}: not found (CLIP_benchmark's webdataset needs it for "
                         "zero-shot classification, unless it is a standard dataset named as wds:DIR:DATASET)")
    images, labels = [], []
    for shard, key, parts in wds_samples(root):
        where = f"{shard}: sample {key}"
        if "cls" not in parts:
            raise UnbagError(f"{where}: no .cls label")
        try:
            labels.append(int(parts["cls"].decode().strip()))
        except ValueError:
            raise UnbagError(f"{where}.cls: not a whole-number label") from None
        images.append(wds_image(parts, where))
    if not images:
        raise UnbagError(f"{root}/test: no samples")
    names, templates, info = names_and_templates(root, [str(k) for k in range(n)], dataset)
    bad = next((y for y in labels if not 0 <= y < n), None)
    if bad is not None:
        raise UnbagError(f"{root}: label {bad} outside the {n} classes of classnames.txt")
    return ClassificationSet("wds", f"wds:{root}", images, labels, names, templates,
                             {"classes": n, "images": len(images), "templates": len(templates), **info})


BENCHMARKS = {
    "imagefolder": Kind("imagefolder:DIR[:DATASET]", lambda path, third, seed: load(path, third or None),
                        global_only=True, dataset=True, summary=ZERO_SHOT),
    "wds": Kind("wds:DIR[:DATASET] (CLIP_benchmark's webdataset: classification or retrieval)",
                lambda path, third, seed: load_wds(path, third or None), global_only=True, dataset=True,
                summary=Summary(ZERO_SHOT.columns + RETRIEVAL.columns, ("all/zeroshot/top1", "all/retrieval/i2t/R@1"),
                                general="all/zeroshot/top1")),
}
