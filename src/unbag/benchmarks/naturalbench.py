"""NaturalBench-Retrieval (Li et al., NeurIPS 2024, arXiv 2410.14669) in its official layout
(docs/benchmarks.md).

naturalbench:DIR   DIR is the unpacked NaturalBench-Retrieval/: metadata.json, a list of {index,
                   image_0, image_1, caption_0, caption_1} with index equal to the position;
                   images DIR/images/<image_k>. caption_k describes image_k.

Official rule (t2v_metrics dataset.py get_winoground_acc): Winoground's text, image and group
with strict `>`, the same as unbag's; micro over all items.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, need, need_text, read_json, release_dir, unique_ids
from .kinds import TWO_BY_TWO, Kind


def load(root: str | Path) -> Benchmark:
    """NaturalBench-Retrieval's pairs."""
    root = release_dir(Path(root), ("metadata.json",), ("NaturalBench-Retrieval",))  # the zip's folder, or above it
    f = root / "metadata.json"
    data = read_json(f)
    if not isinstance(data, list):
        raise UnbagError(f"{f}: expected a list of records")
    dropped, items = Dropped(f"naturalbench:{root}"), []
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        need(ex, ("index", "image_0", "image_1", "caption_0", "caption_1"), where)
        need_text(ex, ("caption_0", "caption_1", "image_0", "image_1"), where)
        if ex["index"] != n:
            raise UnbagError(f"{where}: field 'index' is {ex['index']!r}; the official reader requires it to equal "
                             "the position")
        paths = [root / "images" / ex[k] for k in ("image_0", "image_1")]
        if dropped.present("all", *paths):
            items.append(Item(f"naturalbench-{n}", [str(p) for p in paths], [ex["caption_0"], ex["caption_1"]],
                              {"subset": "all"}, source=where))
    info = dropped.record({"notes": ["text, image, group: strict '>', micro, as t2v_metrics get_winoground_acc"]})
    return Benchmark("naturalbench", f"naturalbench:{root}", unique_ids(items, str(f)), info)


RELEASE = "github.com/Baiqi-Li/NaturalBench (the NaturalBench-Retrieval download)"  # where to download it
BENCHMARKS = {
    "naturalbench": Kind("naturalbench:DIR", lambda path, root, seed: load(path), suite="naturalbench",
                         release=RELEASE, summary=TWO_BY_TWO),
}
