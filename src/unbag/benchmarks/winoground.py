"""Winoground (Thrush et al.) in its official layout (docs/benchmarks.md).

winoground:DIR   DIR/data/examples.jsonl (or DIR/examples.jsonl): {id, image_0, image_1, caption_0,
                 caption_1, tag, secondary_tag, num_main_preds, collapsed_tag}; images
                 DIR/data/images/<image>.png (or DIR/images/). Text, image and group scores, overall
                 and per collapsed tag, tag and secondary tag.
"""
from __future__ import annotations

from pathlib import Path

from .base import Benchmark, Item
from .common import Dropped, image_dir, need, need_text, read_jsonl
from .kinds import TWO_BY_TWO, Kind


def load(root: str | Path) -> Benchmark:
    root = Path(root)
    base = root / "data" if (root / "data" / "examples.jsonl").is_file() else root
    images = image_dir(base, "images")
    items, dropped = [], Dropped(f"winoground:{root}")
    for line, ex in read_jsonl(base / "examples.jsonl"):
        where = f"{base / 'examples.jsonl'}:{line}"
        need(ex, ("id", "image_0", "image_1", "caption_0", "caption_1", "tag", "collapsed_tag"), where)
        need_text(ex, ("caption_0", "caption_1"), where)
        imgs = [str(images / (ex[k] if Path(ex[k]).suffix else ex[k] + ".png")) for k in ("image_0", "image_1")]
        group = {"subset": ex["collapsed_tag"], "tag": ex["tag"], "secondary_tag": ex.get("secondary_tag") or "none"}
        if dropped.present(group["subset"], *imgs, where=where):
            items.append(Item(f"winoground-{ex['id']}", imgs, [ex["caption_0"], ex["caption_1"]], group, source=where))
    return Benchmark("winoground", f"winoground:{root}", items, dropped.record({}))


RELEASE = "huggingface.co/datasets/facebook/winoground (gated: accept its terms first)"  # where to download it
BENCHMARKS = {
    "winoground": Kind("winoground:DIR", lambda path, root, seed: load(path), summary=TWO_BY_TWO,
                       suite="winoground", release=RELEASE),
}
