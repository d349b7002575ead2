"""VALSE (Parcalabescu et al.) in its official layout (docs/benchmarks.md).

valse:DIR   DIR/data/*.json (or DIR/*.json), one file per piece (existence, plurals, counting-hard,
            counting-small-quant, counting-adversarial, relations, action-replacement, actant-swap,
            coreference-standard, coreference-hard, foil-it): {key: {dataset, image_file, caption,
            foil, ..., mturk: {caption, foil, other}}}. Only items with mturk.caption >= 2 are kept.
            Images in IMAGE_ROOT/<dataset>/<image_file> (IMAGE_ROOT defaults to DIR/images), the
            folder named by the record's `dataset` value as the files write it (`visual7w`,
            `coco2017`, `coco_2017`, `SWiG`, `VisDial_v1.0`, `FOIL dataset`; Heidelberg-NLP/VALSE at
            2152d90), else by the names unbag's docs used before (`Visual7W`, `COCO 2017`, `VisDial`,
            `FOIL`), else IMAGE_ROOT/<image_file>. An item whose image is in none of them is left
            out and counted.
            Pairwise accuracy s(I, caption) > s(I, foil) per piece and averaged over pieces.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, images_at, need, need_text, read_json
from .kinds import Kind, Summary
from .sugarcrepe import pairwise

MIN_MTURK_VALID = 2
# the folder names unbag's docs gave before they followed the files' `dataset` values: still read
FORMER_FOLDERS = {"visual7w": "Visual7W", "coco2017": "COCO 2017", "coco_2017": "COCO 2017", "VisDial_v1.0": "VisDial",
                  "FOIL dataset": "FOIL"}


def _image(images: Path, dataset: str, name: str) -> Path:
    """Where a record's image lies: under its dataset's folder, its former name's, or the image root."""
    for folder in (dataset, FORMER_FOLDERS.get(dataset)):
        if folder and (images / folder / name).is_file():
            return images / folder / name
    return images / dataset / name if not (images / name).is_file() else images / name


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    root = Path(root)
    images = images_at(root, image_root) if image_root else root / "images"
    data_dir = root / "data" if (root / "data").is_dir() else root
    files = sorted(data_dir.glob("*.json"))
    if not files:
        raise UnbagError(f"{data_dir}: no VALSE piece files (*.json)")
    items, dropped, gone = [], 0, Dropped(f"valse:{root}")
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
            if not isinstance(ex["dataset"], str) or not isinstance(ex["image_file"], str):
                raise UnbagError(f"{where}: fields 'dataset' and 'image_file' must be strings")
            img = _image(images, ex["dataset"], ex["image_file"])
            if not gone.present(f.stem, img, where=where):
                continue
            items.append(Item(f"{f.stem}-{key}", [str(img)], [ex["caption"], ex["foil"]], {"subset": f.stem},
                              source=where))
    return Benchmark("valse", f"valse:{root}", items, gone.record({"dropped_mturk": dropped}), metric=pairwise)


RELEASE = ("github.com/Heidelberg-NLP/VALSE (data/); images: Visual7W, COCO 2017, SWiG, VisDial v1.0, FOIL (COCO "
           "val2014), each in the folder its records' `dataset` value names")  # where to download it
BENCHMARKS = {
    "valse": Kind("valse:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                  suite="valse", release=RELEASE, summary=Summary(("macro/acc", "all/acc", "*/acc"), "macro/acc")),
}
