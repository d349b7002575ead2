"""CREPE (Ma et al., CVPR 2023, arXiv 2212.07796) in its official layout (docs/benchmarks.md).

crepe:DIR[:IMAGE_ROOT]   DIR holds the repo's unzipped prod_hard_negatives/<neg>/
              prod_vg_hard_negs_<neg>_complexity_<n>.csv (neg: atom, swap, negate; n: 4-12) and/or
              syst_hard_negatives/syst_vg_hard_negs_<split>_in_<train>.csv; images are Visual
              Genome's, IMAGE_ROOT/VG_100K/<id>.jpg else IMAGE_ROOT/VG_100K_2/<id>.jpg (IMAGE_ROOT
              defaults to DIR), cropped to the row's box as the official code crops (black outside).

Official rule (crepe_eval_utils.py get_one2many_rank): the rank of the true caption among
[caption] + hard negatives by a descending argsort; unbag takes it as the stable sort, the caption
first among ties (`R@k_official`); `R@k` ranks tied negatives above it.
"""
from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import torch

from ..errors import UnbagError, warn
from .base import Benchmark, Item, crop_ref
from .common import Dropped, csv_records, folder_in, given_images, release_dir, unique_ids
from .kinds import Kind, Summary
from .shapes import recall_at

KS = (1, 3, 5, 10)
PROD = re.compile(r"^prod_vg_hard_negs_(atom|swap|negate)_complexity_(\d+)\.csv$")
SYST = re.compile(r"^syst_vg_hard_negs_(seen|unseen)_compounds_in_(cc12m|yfcc|laion)\.csv$")


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """R@1, 3, 5, 10 of the true caption (first) among its hard negatives, strict and stable."""
    return recall_at(scores[:, 0], torch.zeros(len(scores), dtype=torch.long), KS)


def _negatives(cell: str, where: str) -> list[str]:
    """A Python list or set literal of strings (sets sorted: their order is the hash's)."""
    try:
        v = ast.literal_eval(cell)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise UnbagError(f"{where}: not a Python list literal: {cell[:80]!r}") from None
    if not isinstance(v, (list, set, tuple)) or not all(isinstance(x, str) for x in v):
        raise UnbagError(f"{where}: expected a list of negative captions, got {type(v).__name__}")
    return sorted(v) if isinstance(v, set) else list(v)


def _image(images: Path, image_id: str) -> Path:
    p = images / "VG_100K" / f"{image_id}.jpg"
    return p if p.is_file() else images / "VG_100K_2" / f"{image_id}.jpg"


def _read(f: Path, images: Path, subsets: list[tuple[str, str]], dropped: Dropped, empty: dict) -> list[Item]:
    """Items of one CSV: (subset, column of negatives) for each subset its rows count in; rows
    without a negative are counted in `empty` (subset -> rows)."""
    items = []
    for line, row in csv_records(f, ("image_id", "caption", "x", "y", "width", "height", *{c for _, c in subsets})):
        where = f"{f}:{line}"
        image_id = row["image_id"].strip()
        if not image_id.isdigit():
            raise UnbagError(f"{where}: field 'image_id' must be an integer, got {row['image_id']!r}")
        if not row["caption"].strip():
            raise UnbagError(f"{where}: field 'caption' is empty")
        try:
            box = [float(row[k]) for k in ("x", "y", "width", "height")]
        except ValueError:
            raise UnbagError(f"{where}: fields x, y, width, height must be numbers") from None
        if not all(math.isfinite(v) for v in box) or box[2] <= 0 or box[3] <= 0:
            raise UnbagError(f"{where}: fields width and height must be positive and x, y, width, height finite, "
                             f"got {', '.join(row[k] for k in ('x', 'y', 'width', 'height'))}")
        path = _image(images, image_id)
        for subset, col in subsets:
            negs = _negatives(row[col], f"{where}: field '{col}'")
            if not negs:
                empty[subset] = empty.get(subset, 0) + 1
                continue
            if not dropped.present(subset, path):
                continue
            items.append(Item(f"{subset}-{line}", [crop_ref(path, *box)], [row["caption"], *negs], {"subset": subset},
                              source=where))
    return items


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    """Every productivity and systematicity file present."""
    given = Path(root)
    root = release_dir(given, ("prod_hard_negatives", "syst_hard_negatives"), ("data",))
    images = given_images(image_root, "crepe") or next((h for h in (root, given) if folder_in((h,), "VG_100K", "VG_100K_2")),
                                                        root)
    files = []
    for f in sorted((root / "prod_hard_negatives").glob("*/*.csv")) if (root / "prod_hard_negatives").is_dir() else []:
        m = PROD.match(f.name)
        if m:
            files.append((f, [(f"prod-{m.group(1)}-{int(m.group(2))}", "hard_negs")]))
    for f in sorted((root / "syst_hard_negatives").glob("*.csv")) if (root / "syst_hard_negatives").is_dir() else []:
        m = SYST.match(f.name)
        if m:
            files.append((f, [(f"syst-{m.group(2)}-{m.group(1)}-{neg}", f"valid_hard_negs_{neg}")
                              for neg in ("atom", "comp", "combined")]))
    if not files:
        raise UnbagError(f"{root}: no prod_hard_negatives/<neg>/prod_vg_hard_negs_*.csv or syst_hard_negatives/"
                         "syst_vg_hard_negs_*.csv found (see docs/benchmarks.md)")
    dropped, items, empty = Dropped(f"crepe:{root}"), [], {}
    for f, subsets in files:
        items += _read(f, images, subsets, dropped, empty)
    if empty:
        warn(f"crepe:{root}: {sum(empty.values())} row(s) left out because they list no negative caption ("
             + ", ".join(f"{k}: {v}" for k, v in sorted(empty.items())) + "); the results record them as "
             "dropped_no_negative")
    info = dropped.record({"dropped_no_negative": empty, "notes": [
        "R@k_official: the stable descending sort of crepe_eval_utils.py (the caption first among ties); R@k: "
        "tied negatives rank above the caption", "productivity rows have 6 candidates, so R@10 is always 1 there",
        "systematicity files: only the columns the official code reads (image_id, caption, box, "
        "valid_hard_negs_{atom,comp,combined}) are used; their full layout could not be checked", "a set literal's "
        "negatives are read sorted (a set has no order)"]})
    return Benchmark("crepe", f"crepe:{root}", unique_ids(items, str(root)), info, metric=metric)


RELEASE = "github.com/RAIVNLab/CREPE (data/*.zip); images: Visual Genome"  # where to download it
BENCHMARKS = {
    "crepe": Kind("crepe:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                  suite="crepe", release=RELEASE,
                  summary=Summary(("macro/R@1_official", "macro/R@1", "all/R@1_official", "all/R@3_official",
                                   "all/R@5_official", "*/R@1_official"), "macro/R@1_official")),
}
