"""VisMin (Awal et al., NeurIPS 2024, arXiv 2407.16772) from its public evaluation kit (docs/benchmarks.md).

vismin:DIR   DIR is the vismin-bench kit: data/ as Hugging Face's `save_to_disk` left it
             (dataset_dict.json, test/state.json listing the Arrow shards, test/data-*.arrow with
             image_0, text_0, image_1, text_1, category, id) and solutions/sim_solution.csv (category,
             Text, Image: relations such as 'T0_I0 > T1_I0 & T1_I1 > T0_I1', row k for dataset row k).

The kit's metric.py is the official rule: text is right when every relation of the row's Text
cell holds, image when every relation of its Image cell holds, group when both; `>`/`<` are strict,
`=` holds on equality. The shards are read through pyarrow (memory-mapped: an image is decoded
when it is scored, never held). Without the solution file the rows are not scored: the kit's
images and captions are not guaranteed to pair up by index.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Benchmark, Item, arrow_ref
from .common import read_json, unique_ids
from .kinds import Kind, Summary

CATEGORIES = ("object", "attribute", "counting", "relation")
_REL = re.compile(r"^\s*T([01])_I([01])\s*([<>=])\s*T([01])_I([01])\s*$")


def _relations(cell: str, where: str) -> list[tuple[int, int, str, int, int]]:
    """(caption, image, op, caption, image) of each relation in 'T0_I0 > T1_I0 & ...'."""
    out = []
    for part in cell.split("&"):
        m = _REL.match(part)
        if not m:
            raise UnbagError(f"{where}: {part.strip()!r} is not a relation like 'T0_I0 > T1_I0'")
        c1, i1, op, c2, i2 = m.groups()
        out.append((int(c1), int(i1), op, int(c2), int(i2)))
    return out


def _holds(s: torch.Tensor, rels) -> tuple[bool, bool]:
    """(every relation holds on scores s [image, caption], one of them compared equal values)."""
    ok, tie = True, False
    for c1, i1, op, c2, i2 in rels:
        a, b = s[i1, c1], s[i2, c2]
        tie |= bool(a == b) and op != "="
        ok &= bool(a > b) if op == ">" else bool(a < b) if op == "<" else bool(a == b)
    return ok, tie


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """The kit's text, image and group scores from each row's relations."""
    out = {k: [] for k in ("text", "image", "tie/text", "tie/image")}
    for s, it in zip(scores, items):
        for k in ("text", "image"):
            ok, tie = _holds(s, it.meta[k])
            out[k].append(ok)
            out[f"tie/{k}"].append(tie)
    t = {k: torch.tensor(v, dtype=torch.bool) for k, v in out.items()}
    return {"text": t["text"].float(), "image": t["image"].float(), "group": (t["text"] & t["image"]).float(),
            "tie/text": t["tie/text"], "tie/image": t["tie/image"], "tie/group": t["tie/text"] | t["tie/image"]}


def _shards(data: Path) -> list[Path]:
    """The test split's Arrow shards in state.json's order (else sorted)."""
    test = data / "test"
    state = test / "state.json"
    if state.is_file():
        files = read_json(state).get("_data_files")
        if not isinstance(files, list) or not all(isinstance(x, dict) and "filename" in x for x in files):
            raise UnbagError(f"{state}: field '_data_files' must list {{filename}} objects")
        return [test / x["filename"] for x in files]
    return sorted(test.glob("*.arrow"))


def _solutions(f: Path) -> list[dict]:
    if not f.is_file():
        raise UnbagError(f"{f}: file not found; VisMin is scored with the kit's solutions/sim_solution.csv (the "
                         "dataset's images and captions are not guaranteed to pair up by index; see docs/benchmarks.md)")
    with open(f, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    for need in ("category", "Text", "Image"):
        if rows and need not in rows[0]:
            raise UnbagError(f"{f}:1: missing column '{need}' (columns: {', '.join(rows[0])})")
    return rows


def load(root: str | Path) -> Benchmark:
    """VisMin's 2,084 contrastive items."""
    import pyarrow as pa

    root = Path(root)
    data = root / "data" if (root / "data").is_dir() else root
    shards = _shards(data)
    if not shards:
        raise UnbagError(f"{data}: no test/*.arrow shard found (DIR is the vismin-bench kit; see docs/benchmarks.md)")
    sol_file = root / "solutions" / "sim_solution.csv"
    solutions = _solutions(sol_file)
    items, row = [], 0
    for shard in shards:
        if not shard.is_file():
            raise UnbagError(f"{shard}: shard listed in state.json not found")
        try:
            table = pa.ipc.open_stream(pa.memory_map(str(shard))).read_all()
        except (pa.ArrowInvalid, OSError) as e:
            raise UnbagError(f"{shard}: not an Arrow stream ({e})") from None
        missing = [c for c in ("image_0", "text_0", "image_1", "text_1", "category") if c not in table.column_names]
        if missing:
            raise UnbagError(f"{shard}: missing column(s) {', '.join(missing)}")
        cols = {c: table.column(c).to_pylist() for c in ("text_0", "text_1", "category")}
        ids = table.column("id").to_pylist() if "id" in table.column_names else [None] * table.num_rows
        for k in range(table.num_rows):
            where = f"{shard}: row {k}"
            if row >= len(solutions):
                raise UnbagError(f"{sol_file}: {len(solutions)} rows, fewer than the dataset's (row {row} has none)")
            sol, cat = solutions[row], cols["category"][k]
            if sol["category"].strip() != str(cat):
                raise UnbagError(f"{sol_file}:{row + 2}: category {sol['category']!r}, the dataset's row {row} is {cat!r}")
            for c in ("text_0", "text_1"):
                if not isinstance(cols[c][k], str) or not cols[c][k].strip():
                    raise UnbagError(f"{where}: field '{c}' must be a non-empty caption")
            meta = {"text": _relations(sol["Text"], f"{sol_file}:{row + 2}: field 'Text'"),
                    "image": _relations(sol["Image"], f"{sol_file}:{row + 2}: field 'Image'")}
            items.append(Item(f"vismin-{ids[k] if ids[k] is not None else row}",
                              [arrow_ref(shard, k, "image_0"), arrow_ref(shard, k, "image_1")],
                              [cols["text_0"][k], cols["text_1"][k]], {"subset": str(cat)}, meta=meta, source=where))
            row += 1
    if row != len(solutions):
        raise UnbagError(f"{sol_file}: {len(solutions)} rows, the dataset has {row}; they pair up by position")
    info = {"notes": ["scored with solutions/sim_solution.csv, as the kit's metric.py: every relation of a row's "
                      "Text (Image) cell must hold; '>' and '<' strict"]}
    return Benchmark("vismin", f"vismin:{root}", unique_ids(items, str(root)), info, metric=metric)


RELEASE = "huggingface.co/datasets/mair-lab/vismin-bench"  # where to download it
BENCHMARKS = {
    "vismin": Kind("vismin:DIR", lambda path, root, seed: load(path), suite="vismin", release=RELEASE,
                   summary=Summary(("macro/group", "macro/text", "macro/image", "*/group"), "macro/group")),
}
