"""VALSE (Parcalabescu et al.) in its official layout (docs/benchmarks.md).

valse:DIR   DIR/data/*.json (or DIR/*.json), one file per piece (existence, plurals, counting-hard,
            counting-small-quant, counting-adversarial, relations, action-replacement, actant-swap,
            coreference-standard, coreference-hard, foil-it): {key: {dataset, image_file, caption,
            foil, ..., mturk: {caption, foil, other}}}. Only items with mturk.caption >= 2 are kept.
            Images in DIR/images/<dataset>/<image_file>, else DIR/images/<image_file>.
            Pairwise accuracy s(I, caption) > s(I, foil) per piece and averaged over pieces.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import images_at, need, need_text, read_json
from .kinds import Kind, Summary
from .sugarcrepe import pairwise

MIN_MTURK_VALID = 2


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    root = Path(root)
    images = images_at(root, image_root) if image_root else root / "images"
    data_dir = root / "data" if (root / "data").is_dir() else root
    files = sorted(data_dir.glob("*.json"))
    if not files:
        raise UnbagError(f"{data_dir}: no VALSE piece files (*.json)")
    items, dropped = [], 0
    for f in files:
        data = read_json(f)
        if not isinstance(data, dict):
            raise UnbagError(f"{f}: expected an object keyed by item id")
        for key, ex in data.items():
            where = f"{f}: item {key!r}"
            need(ex, ("dataset", "image_file", "caption", "foil", "mturk"), where)
            need(ex["mturk"], ("caption",), f"{where} field 'mturk'")
            need_text(ex, ("caption", "foil"), where)
            if ex["mturk"]["caption"] < MIN_MTURK_VALID:
                dropped += 1
                continue
            img = images / ex["dataset"] / ex["image_file"]
            if not img.exists():
                img = images / ex["image_file"]
            items.append(Item(f"{f.stem}-{key}", [str(img)], [ex["caption"], ex["foil"]], {"subset": f.stem},
                              source=where))
    return Benchmark("valse", f"valse:{root}", items, {"dropped_mturk": dropped}, metric=pairwise)


RELEASE = "github.com/Heidelberg-NLP/VALSE (data/); images: Visual7W, COCO 2017, SWiG, VisDial, FOIL"  # where to download it
BENCHMARKS = {
    "valse": Kind("valse:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                  suite="valse", release=RELEASE, summary=Summary(("macro/acc", "all/acc", "*/acc"), "macro/acc")),
}
