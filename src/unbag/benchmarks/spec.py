"""SPEC (Peng et al., CVPR 2024, arXiv 2312.00081) in its official layout (docs/benchmarks.md).

spec:DIR   DIR is the data_root data.zip unpacks into (or its data/ folder): <subset>/image2text.json
           and <subset>/text2image.json, each a list of {"query", "keys": [K], "label"}; image paths
           relative to the subset folder. Subsets: absolute_size, relative_size, absolute_spatial,
           relative_spatial, existence, count.

Official rule (spec/models/clip_wrapper.py): torch's argmax over the K candidates equals the label,
so a tie goes to the earlier candidate (`i2t_official`, `t2i_official`); `i2t`, `t2i` are strict.
The official "average all subset" is the macro mean.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, missing_subsets, read_json, unique_ids
from .kinds import Kind, Summary
from .shapes import choose

SUBSETS = ("absolute_size", "relative_size", "absolute_spatial", "relative_spatial", "existence", "count")
DIRECTIONS = {"i2t": "image2text.json", "t2i": "text2image.json"}


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """Image-to-text items [1, K] choose among captions, text-to-image items [K, 1] among images."""
    out: dict[str, torch.Tensor] = {}
    n = len(items)
    for d in DIRECTIONS:
        idx = [k for k, it in enumerate(items) if it.meta["direction"] == d]
        if not idx:
            continue
        s = scores[idx][:, 0, :] if d == "i2t" else scores[idx][:, :, 0]
        got = choose(s, torch.tensor([items[k].meta["label"] for k in idx]), d)
        for key, v in got.items():
            full = torch.zeros(n, dtype=torch.bool) if key.startswith("tie/") else torch.full((n,), float("nan"))
            full[idx] = v.to(full.dtype)
            out[key] = full
    return out


def _items(sub: Path, subset: str, d: str, dropped: Dropped) -> list[Item]:
    f = sub / DIRECTIONS[d]
    data = read_json(f)
    if not isinstance(data, list):
        raise UnbagError(f"{f}: expected a list of {{query, keys, label}}")
    items = []
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        if not isinstance(ex, dict):
            raise UnbagError(f"{where}: expected an object {{query, keys, label}}")
        for k, t in (("query", str), ("keys", list), ("label", int)):
            if not isinstance(ex.get(k), t) or isinstance(ex.get(k), bool):
                raise UnbagError(f"{where}: field '{k}' missing or not a {t.__name__}")
        keys = ex["keys"]
        if len(keys) < 2 or not all(isinstance(k, str) and k.strip() for k in keys):
            raise UnbagError(f"{where}: field 'keys' must list at least two non-empty strings")
        if not 0 <= ex["label"] < len(keys):
            raise UnbagError(f"{where}: field 'label' {ex['label']} is not an index into its {len(keys)} keys")
        images, caps = ([ex["query"]], keys) if d == "i2t" else (keys, [ex["query"]])
        paths = [sub / p for p in images]
        if dropped.present(subset, *paths):
            items.append(Item(f"{subset}-{d}-{n}", [str(p) for p in paths], list(caps),
                              {"subset": subset}, meta={"direction": d, "label": ex["label"]},
                              source=where))
    return items


def load(root: str | Path) -> Benchmark:
    """SPEC from its data_root: every subset and direction whose file is present."""
    root = Path(root)
    base = root / "data" if not any((root / s).is_dir() for s in SUBSETS) and (root / "data").is_dir() else root
    wanted = {f"{s}/{d}": base / s / f for s in SUBSETS for d, f in DIRECTIONS.items()}
    gone = missing_subsets(f"spec:{root}", wanted)
    if len(gone) == len(wanted):
        raise UnbagError(f"{root}: no <subset>/image2text.json or text2image.json found (subsets: "
                         f"{', '.join(SUBSETS)}; see docs/benchmarks.md)")
    dropped, items = Dropped(f"spec:{root}"), []
    for key in wanted:
        if key not in gone:
            s, d = key.split("/")
            items += _items(base / s, s, d, dropped)
    info = dropped.record({"missing_subsets": gone, "notes": [
        "i2t/t2i_official: torch argmax as in clip_wrapper.py, a tie goes to the earlier candidate; i2t/t2i: strict"]})
    return Benchmark("spec", f"spec:{root}", unique_ids(items, str(root)), info, metric=metric)


RELEASE = "huggingface.co/datasets/wjpoom/SPEC"  # where to download it
BENCHMARKS = {
    "spec": Kind("spec:DIR", lambda path, root, seed: load(path), suite="spec", release=RELEASE,
                 summary=Summary(("macro/i2t_official", "macro/t2i_official", "macro/i2t", "macro/t2i",
                                  "*/i2t_official", "*/t2i_official"), "macro/i2t_official",
                                 {"i2t": "I2T", "t2i": "T2I"},
                                 suite=("macro/i2t_official", "macro/t2i_official"))),
}
