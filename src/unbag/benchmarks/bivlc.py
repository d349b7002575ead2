"""BiVLC (Miranda et al.) from its parquet release (docs/benchmarks.md).

bivlc:DIR   parquet file(s) in DIR (or DIR/data/) with columns image, caption, negative_caption,
            negative_image, type, subtype; images embedded (bytes, or Hugging Face's {bytes, path}).
            Items are 2x2: images (image, negative_image), captions (caption, negative_caption);
            I2T = text score, T2I = image score, group; per type_subtype (unbag's rows), per type
            (`type=replace/text`...: BiVLC's official table) and overall.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError
from ..utils import opened
from .base import Benchmark, Item
from .common import need_text
from .kinds import Kind, Summary

COLUMNS = ("image", "caption", "negative_caption", "negative_image", "type", "subtype")


def _bytes(v, where: str) -> bytes:
    if isinstance(v, dict):
        v = v.get("bytes")
    if not isinstance(v, (bytes, bytearray)):
        raise UnbagError(f"{where}: image is not embedded bytes")
    return bytes(v)


def load(root: str | Path) -> Benchmark:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UnbagError("BiVLC is read with pyarrow: pip install pyarrow") from None
    root = Path(root)
    files = sorted(root.glob("*.parquet")) or sorted((root / "data").glob("*.parquet"))
    if not files:
        raise UnbagError(f"{root}: no .parquet files")
    items = []
    for f in files:
        try:
            table = pq.read_table(opened(f))
        except (pa.ArrowException, OSError) as e:  # a truncated download, or not parquet at all
            raise UnbagError(f"{f}: not a readable parquet file ({e})") from None
        missing = [c for c in COLUMNS if c not in table.column_names]
        if missing:
            raise UnbagError(f"{f}: missing column '{missing[0]}'")
        for n, row in enumerate(table.to_pylist()):
            where = f"{f}: row {n}"
            need_text(row, ("caption", "negative_caption"), where)
            imgs = [_bytes(row["image"], f"{where} column 'image'"),
                    _bytes(row["negative_image"], f"{where} column 'negative_image'")]
            items.append(Item(f"bivlc-{f.stem}-{n}", imgs, [row["caption"], row["negative_caption"]],
                              # per type as BiVLC's own evaluation reports it (replace / swap / add)
                              {"subset": f"{row['type']}_{row['subtype']}", "type": row["type"]}, source=where))
    return Benchmark("bivlc", f"bivlc:{root}", items)


RELEASE = "huggingface.co/datasets/imirandam/BiVLC (save_to_disk or its parquet files)"  # where to download it
BENCHMARKS = {
    "bivlc": Kind("bivlc:DIR", lambda path, root, seed: load(path), suite="bivlc", release=RELEASE,
                  summary=Summary(("all/text", "all/image", "all/group", "all/groupmatch", "type=*/text", "type=*/image",
                                   "type=*/group"), "all/group", {"text": "I2T", "image": "T2I"})),
}
