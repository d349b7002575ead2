"""The bivlc release, in miniature (official layout, planted ties)."""
from ._files import COLORS, png_bytes

SPECS = {"bivlc": "bivlc:{dir}"}


def make(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("bivlc")
    rows = [{"image": {"bytes": png_bytes(2 * k), "path": None}, "caption": f"a {COLORS[k]} cat",
             "negative_caption": f"a {COLORS[k + 1]} cat", "negative_image": {"bytes": png_bytes(2 * k + 1), "path": None},
             "type": "replace" if k < 2 else "swap", "subtype": "att"} for k in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), root / "test-00000.parquet")
    return root
