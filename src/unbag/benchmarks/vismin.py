"""VisMin (Awal et al., NeurIPS 2024, arXiv 2407.16772) from its public evaluation kit (docs/benchmarks.md).

vismin:DIR   DIR is huggingface.co/datasets/mair-lab/vismin-bench's `save_to_disk` folder
             (dataset_dict.json, test/state.json listing the Arrow shards, test/data-*.arrow with
             image_0, text_0, image_1, text_1, category, id), or a kit root holding it as data/.

The kit's rule today (rabiulcste/vismin at 29ce2c0, vismin-bench/metric.py
`compute_contrastive_accuracy`): text_k belongs to image_k; text is right when T0_I0 > T1_I0 and
T1_I1 > T0_I1, image when T0_I0 > T0_I1 and T1_I1 > T1_I0, group when both, strict, per row's
category: Winoground's rule, the same as unbag's (no `_official`). Commit 680a3ee deleted the
earlier solutions/sim_solution.csv with the data re-ordered: a copy found beside the data belongs
to the superseded release and is ignored, with a warning. The shards are read through pyarrow
(memory-mapped: an image is decoded when it is scored, never held).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError, warn
from ..utils import opened
from .base import Benchmark, Item, arrow_ref
from .common import kept_inside, read_json, unique_ids
from .kinds import Kind, Summary

CATEGORIES = ("object", "attribute", "counting", "relation")
SUPERSEDED = Path("solutions") / "sim_solution.csv"


def _shards(data: Path) -> list[Path]:
    """The test split's Arrow shards in state.json's order (else sorted)."""
    test = data / "test"
    state = test / "state.json"
    if state.is_file():
        files = read_json(state).get("_data_files")
        if not isinstance(files, list) or not all(isinstance(x, dict) and "filename" in x for x in files):
            raise UnbagError(f"{state}: field '_data_files' must list {{filename}} objects")
        for n, x in enumerate(files):
            if not isinstance(x["filename"], str) or not x["filename"]:
                raise UnbagError(f"{state}: _data_files[{n}]: field 'filename' must be a file name, got {x['filename']!r}")
            kept_inside(test / x["filename"], [test], f"{state}: _data_files[{n}]: field 'filename'", "shard")
        return [test / x["filename"] for x in files]
    return sorted(test.glob("*.arrow"))


def load(root: str | Path) -> Benchmark:
    """VisMin's 2,084 contrastive items, each row's text_k with its image_k."""
    import pyarrow as pa

    root = Path(root)
    data = root / "data" if (root / "data").is_dir() else root
    shards = _shards(data)
    if not shards:
        raise UnbagError(f"{data}: no test/*.arrow shard found (DIR is the vismin-bench save_to_disk folder or a kit "
                         "root holding it as data/; see docs/benchmarks.md)")
    old = [p for p in (root / SUPERSEDED, data / SUPERSEDED) if p.is_file()]
    if old:
        warn(f"{old[0]}: ignored: the kit deleted its sim_solution.csv when it re-ordered the data (rabiulcste/vismin "
             "680a3ee); today's rule pairs text_k with image_k (docs/benchmarks.md#vismin)")
    items = []
    for shard in shards:
        if not shard.is_file():
            raise UnbagError(f"{shard}: shard listed in state.json not found")
        try:
            table = pa.ipc.open_stream(pa.memory_map(str(opened(shard)))).read_all()
        except (pa.ArrowInvalid, OSError) as e:
            raise UnbagError(f"{shard}: not an Arrow stream ({e})") from None
        missing = [c for c in ("image_0", "text_0", "image_1", "text_1", "category") if c not in table.column_names]
        if missing:
            raise UnbagError(f"{shard}: missing column(s) {', '.join(missing)}")
        cols = {c: table.column(c).to_pylist() for c in ("text_0", "text_1", "category")}
        ids = table.column("id").to_pylist() if "id" in table.column_names else [None] * table.num_rows
        for k in range(table.num_rows):
            where = f"{shard}: row {k}"
            for c in ("text_0", "text_1"):
                if not isinstance(cols[c][k], str) or not cols[c][k].strip():
                    raise UnbagError(f"{where}: field '{c}' must be a non-empty caption")
            if not isinstance(cols["category"][k], str) or not cols["category"][k].strip():
                raise UnbagError(f"{where}: field 'category' must be a non-empty string")
            row = len(items)
            items.append(Item(f"vismin-{ids[k] if ids[k] is not None else row}",
                              [arrow_ref(shard, k, "image_0"), arrow_ref(shard, k, "image_1")],
                              [cols["text_0"][k], cols["text_1"][k]], {"subset": cols["category"][k]}, source=where))
    info = {"notes": ["the kit's rule today (metric.py at 29ce2c0): text_k belongs to image_k, Winoground's text, "
                      "image and group, strict"] + ([f"{old[0]} ignored: superseded (rabiulcste/vismin 680a3ee)"]
                                                   if old else [])}
    return Benchmark("vismin", f"vismin:{root}", unique_ids(items, str(root)), info)


RELEASE = "huggingface.co/datasets/mair-lab/vismin-bench"  # where to download it
BENCHMARKS = {
    "vismin": Kind("vismin:DIR", lambda path, root, seed: load(path), suite="vismin", release=RELEASE,
                   summary=Summary(("macro/group", "macro/text", "macro/image", "macro/groupmatch", "*/group"), "macro/group")),
}
