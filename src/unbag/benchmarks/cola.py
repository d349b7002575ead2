"""COLA (Ray et al., NeurIPS 2023, arXiv 2305.03689) in its official layout (docs/benchmarks.md).

cola:DIR[:IMAGE_ROOT]   DIR is the repo's data/: COLA_multiobjects_matching_benchmark.json, a list
              of [image url 0, caption 0, image url 1, caption 1], and
              COLA_singleobjects_benchmark_{GQA,CLEVR,PACO}.json, {labels: [class names], data:
              [[image file, (annotation), label 0/1 per class, hard_list 0/1 per class], ...]} (or
              the same as a two-element list); images IMAGE_ROOT/<url basename> and
              IMAGE_ROOT/<image file>, else its basename (IMAGE_ROOT defaults to DIR/images).

Official rules (scripts/eval.py): multi-object accuracy is Winoground's image score, strict
(`multiobj/image`; text and group alongside). Single-object: per class with a positive image, the
average precision of the class name's scores over the images whose hard_list is 1, averaged over
classes. `mAP_official` is torchmetrics' (tied scores share a threshold, as sklearn's); `mAP`
orders tied images negatives first. A class whose hard set holds no positive has no AP and is
skipped, counted as `skipped_no_positive`.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError, warn
from .base import Benchmark, Item
from .common import Dropped, first_file, folder_in, given_images, read_json, release_dir, unique_ids
from .kinds import Kind, Summary
from .shapes import average_precision, winoground

MULTI = "COLA_multiobjects_matching_benchmark.json"
SINGLE = {"single-gqa": "COLA_singleobjects_benchmark_GQA.json", "single-clevr": "COLA_singleobjects_benchmark_CLEVR.json",
          "single-paco": "COLA_singleobjects_benchmark_PACO.json"}


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """2x2 multi-object items: text, image, group; a class's images x its name: AP both ways."""
    if items[0].meta.get("labels") is None:
        return winoground(scores)
    return average_precision(scores, [torch.tensor(it.meta["labels"]) for it in items])


def _multi(f: Path, images: Path, dropped: Dropped) -> list[Item]:
    data = read_json(f)
    if not isinstance(data, list):
        raise UnbagError(f"{f}: expected a list of [image url, caption, image url, caption]")
    items = []
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        if not (isinstance(ex, list) and len(ex) == 4 and all(isinstance(x, str) and x.strip() for x in ex)):
            raise UnbagError(f"{where}: expected [image url 0, caption 0, image url 1, caption 1], non-empty strings")
        paths = [images / Path(ex[k]).name for k in (0, 2)]
        if dropped.present("multiobj", *paths):
            items.append(Item(f"multiobj-{n}", [str(p) for p in paths], [ex[1], ex[3]], {"subset": "multiobj"},
                              source=where))
    return items


def _single(f: Path, subset: str, images: Path, dropped: Dropped, skipped: dict) -> list[Item]:
    data = read_json(f)
    if isinstance(data, dict) and "labels" in data and "data" in data:
        labels, rows = data["labels"], data["data"]
    elif isinstance(data, list) and len(data) == 2:
        labels, rows = data
    else:
        raise UnbagError(f"{f}: expected {{labels, data}} or [labels, data]")
    if not (isinstance(labels, list) and all(isinstance(x, str) and x.strip() for x in labels) and isinstance(rows, list)):
        raise UnbagError(f"{f}: field 'labels' must list class names and 'data' the images")
    paths, lab, hard = [], [], []
    for n, row in enumerate(rows):
        where = f"{f}: data[{n}]"
        if not (isinstance(row, list) and len(row) >= 3 and isinstance(row[0], str)):
            raise UnbagError(f"{where}: expected [image file, (annotation), label, hard_list]")
        for name, v in (("label", row[-2]), ("hard_list", row[-1])):
            if not (isinstance(v, list) and len(v) == len(labels) and all(x in (0, 1) for x in v)):
                raise UnbagError(f"{where}: field '{name}' must hold one 0/1 per class ({len(labels)})")
        p = first_file(images / row[0], images / Path(row[0]).name)
        if p is None:
            dropped.add(subset)
            continue
        paths.append(str(p))
        lab.append(row[-2])
        hard.append(row[-1])
    items = []
    for c, name in enumerate(labels):
        if not any(y[c] for y in lab):
            continue  # no positive image at all: the official code skips the class
        keep = [k for k in range(len(paths)) if hard[k][c]]
        if not keep:
            continue
        y = [lab[k][c] for k in keep]
        if not any(y):
            skipped[subset] = skipped.get(subset, 0) + 1
            continue
        items.append(Item(f"{subset}-{c}", [paths[k] for k in keep], [name], {"subset": subset},
                          meta={"labels": y}, source=f"{f}: class {c} ({name!r})"))
    return items


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    """COLA's multi-object pairs and single-object classes, each file present."""
    given = Path(root)
    root = release_dir(given, (MULTI, *SINGLE.values()), ("data",))  # the repo's data/, or the repo
    images = given_images(image_root, "cola") or folder_in((root, given), "images") or root / "images"
    files = {"multiobj": root / MULTI, **{s: root / f for s, f in SINGLE.items()}}
    missing = [s for s, f in files.items() if not f.is_file()]
    if len(missing) == len(files):
        raise UnbagError(f"{root}: none of {MULTI}, {', '.join(SINGLE.values())} found (see docs/benchmarks.md)")
    if missing:
        warn(f"cola:{root}: subset file(s) missing, not scored: "
             + ", ".join(f"{s} ({files[s].name})" for s in missing))
    dropped, skipped, items = Dropped(f"cola:{root}"), {}, []
    for subset, f in files.items():
        if subset not in missing:
            items += _multi(f, images, dropped) if subset == "multiobj" else _single(f, subset, images, dropped, skipped)
    info = dropped.record({"missing_subsets": missing, "skipped_no_positive": skipped, "notes": [
        "multiobj/image is the official accuracy (Winoground's image score, strict)", "the single-object files are "
        "read as {labels, data} or [labels, data], entries as [image, (annotation), label, hard_list]: the public "
        "copy could not be checked, the reading follows scripts/eval.py", "mAP_official: torchmetrics' AP "
        "(tied scores share a threshold); mAP: tied negatives ranked first"]})
    return Benchmark("cola", f"cola:{root}", unique_ids(items, str(root)), info, metric=metric)


RELEASE = "github.com/arijitray1993/COLA (data/); images: Visual Genome/GQA, CLEVR, PACO"  # where to download it
BENCHMARKS = {
    "cola": Kind("cola:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                 suite="cola", release=RELEASE,
                 summary=Summary(("multiobj/image", "multiobj/group", "multiobj/groupmatch",
                                 "macro/mAP_official", "macro/mAP", "*/mAP_official"),
                                 ("multiobj/image", "macro/mAP_official"), suite=("multiobj/image", "macro/mAP_official"))),
}
