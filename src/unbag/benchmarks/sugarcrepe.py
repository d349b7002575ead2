"""SugarCrepe and SugarCrepe++ in their official layouts (docs/benchmarks.md).

sugarcrepe:DIR     DIR/data/{add_att,add_obj,replace_att,replace_obj,replace_rel,swap_att,swap_obj}.json,
                   each {"0": {"filename", "caption", "negative_caption"}, ...}; COCO val2017 images
                   in DIR/images/ (or DIR/val2017/). Accuracy s(I,pos) > s(I,neg) per subset, the
                   macro average (mean of the 7) and the micro average (over all items).
sugarcrepe++:DIR   DIR/data/{replace_att,replace_obj,replace_rel,swap_att,swap_obj}.json, each a list of
                   {"id", "filename", "caption", "caption2", "negative_caption"}; ITT (image-to-text)
                   from the score tensor, TOT (text-only) from the text embeddings.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError, warn
from .base import Benchmark, Item
from .common import Dropped, images_at, need, need_text, read_json
from .kinds import PAIRWISE, Kind, Summary
from .shapes import first_caption

SC_SUBSETS = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
SCPP_SUBSETS = ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")


def _files(root: Path, subsets: tuple[str, ...]) -> list[tuple[str, Path]]:
    """The subset files present; a missing or unknown one is warned about by name (the macro
    average then covers fewer subsets, which the results record)."""
    data = root / "data" if (root / "data").is_dir() else root
    found = [(s, data / f"{s}.json") for s in subsets if (data / f"{s}.json").is_file()]
    if not found:
        raise UnbagError(f"{root}: none of {', '.join(s + '.json' for s in subsets)} found in {data}")
    missing = [f"{s}.json" for s in subsets if not (data / f"{s}.json").is_file()]
    unknown = sorted(p.name for p in data.glob("*.json") if p.stem not in subsets)
    if missing:
        warn(f"{data}: {len(missing)} of {len(subsets)} subset files missing ({', '.join(missing)}); the macro "
             f"average covers the {len(found)} present")
    if unknown:
        warn(f"{data}: not a subset file, not read: {', '.join(unknown)} (subsets: {', '.join(subsets)})")
    return found


def pairwise(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """Accuracy: the positive caption (first) beats the negative, strict."""
    return first_caption(scores, official=False)


def itt(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """SugarCrepe++ image-to-text on scores [items, 1, 3] (P1, P2, N): s(I,P1) > s(I,N) and s(I,P2) > s(I,N)."""
    if scores.ndim != 3 or scores.shape[1:] != (1, 3):
        raise ValueError(f"itt needs scores [items, 1, 3] (P1, P2, N), got {tuple(scores.shape)}")
    s = scores[:, 0]
    ok = (s[:, 0] > s[:, 2]) & (s[:, 1] > s[:, 2])
    return {"itt": ok.float(), "tie/itt": (s[:, 0] == s[:, 2]) | (s[:, 1] == s[:, 2])}


def tot(texts: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """SugarCrepe++ text-only on unit text embeddings [items, 3, D] (P1, P2, N): s(P1,P2) > s(P1,N)
    and s(P1,P2) > s(P2,N)."""
    p1, p2, n = texts[:, 0], texts[:, 1], texts[:, 2]
    pp, p1n, p2n = (p1 * p2).sum(-1), (p1 * n).sum(-1), (p2 * n).sum(-1)
    return {"tot": ((pp > p1n) & (pp > p2n)).float(), "tie/tot": (pp == p1n) | (pp == p2n)}


def _info(items: list[Item], subsets: tuple[str, ...]) -> dict:
    have = sorted({i.group["subset"] for i in items})
    return {"subsets": have, "macro_subsets": have, "missing_subsets": [s for s in subsets if s not in have]}


def load_sugarcrepe(root: str | Path, image_root: str | None = None) -> Benchmark:
    root = Path(root)
    images = images_at(root, image_root)
    items, dropped = [], Dropped(f"sugarcrepe:{root}")
    for subset, f in _files(root, SC_SUBSETS):
        data = read_json(f)
        if not isinstance(data, dict):
            raise UnbagError(f"{f}: expected an object keyed by item id")
        for key, ex in data.items():
            where = f"{f}: item {key!r}"
            need(ex, ("filename", "caption", "negative_caption"), where)
            need_text(ex, ("caption", "negative_caption"), where)
            if dropped.present(subset, images / ex["filename"], where=where):
                items.append(Item(f"{subset}-{key}", [str(images / ex["filename"])],
                                  [ex["caption"], ex["negative_caption"]], {"subset": subset}, source=where))
    return Benchmark("sugarcrepe", f"sugarcrepe:{root}", items, dropped.record(_info(items, SC_SUBSETS)), metric=pairwise)


def load_sugarcrepe_pp(root: str | Path, image_root: str | None = None) -> Benchmark:
    root = Path(root)
    images = images_at(root, image_root)
    items, dropped = [], Dropped(f"sugarcrepe++:{root}")
    for subset, f in _files(root, SCPP_SUBSETS):
        data = read_json(f)
        if not isinstance(data, list):
            raise UnbagError(f"{f}: expected a list of items")
        for n, ex in enumerate(data):
            where = f"{f}: item {n}"
            need(ex, ("filename", "caption", "caption2", "negative_caption"), where)
            need_text(ex, ("caption", "caption2", "negative_caption"), where)
            if dropped.present(subset, images / ex["filename"], where=where):  # left out of TOT as well: one item set
                items.append(Item(f"{subset}-{ex.get('id', n)}", [str(images / ex["filename"])],
                                  [ex["caption"], ex["caption2"], ex["negative_caption"]], {"subset": subset},
                                  source=where))
    return Benchmark("sugarcrepe++", f"sugarcrepe++:{root}", items, dropped.record(_info(items, SCPP_SUBSETS)), metric=itt,
                     text_metric=tot)


BENCHMARKS = {
    "sugarcrepe": Kind("sugarcrepe:DIR[:IMAGE_ROOT]", lambda path, root, seed: load_sugarcrepe(path, root),
                       image_root=True, summary=PAIRWISE, suite="sugarcrepe",
                       release="github.com/RAIVNLab/sugar-crepe (data/); images: COCO val2017"),
    "sugarcrepe++": Kind("sugarcrepe++:DIR[:IMAGE_ROOT]", lambda path, root, seed: load_sugarcrepe_pp(path, root),
                         image_root=True, suite="sugarcrepe++",
                         release="github.com/Sri-Harsha/scpp (data/); images: COCO val2017",
                         summary=Summary(("macro/itt", "macro/tot", "all/itt", "all/tot", "*/itt", "*/tot"),
                                         "macro/itt", {"itt": "ITT", "tot": "TOT"})),
}
