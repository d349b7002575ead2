"""Feature cache for the alignment heads: frozen features extracted once, read many times.

Layout of DIR:
  index.json            backbone spec and weights hash, fields (dtype, row shape), rows, shards
  {field}-{k:05d}.npy   rows [k*SHARD, (k+1)*SHARD) of a field (fp16 features, bool masks, int64)
Fields: img_global [D], img_patches [P, D], img_patches_early [P, D] (after the first block, where
the backend offers it), txt_global [D], txt_tokens [L, D], txt_mask [L],
phr_global [K, D] (each caption phrase encoded on its own), phr_mask [K], phr_want [K] (how many
boxes a region must join to match the phrase: 1 for an object, n for "n ..." groups, 0 any),
img_regions [R, D] (SGI's region embeddings: blobs and their unions, masked in place, 2 phase
views; zero rows pad), reg_size [R] (boxes per region, 0 for padding), twin [] (row of this row's
binding-swap twin, -1 if none). Rows 0..N-1 are stream samples, the rest their twins.
Caches of caption data (csv/jsonl/wds/degla, e.g. COCO) have no twins; each row brings a hard
negative caption instead, as neg_txt_global, neg_txt_tokens, neg_txt_mask, neg_phr_global,
neg_phr_mask, neg_phr_want and has_neg [] (False where no negative could be made).
Scoring with a calibrated TFLocal-LI also computes phr_alt [K, A, D] and phr_alt_mask [K, A] (each
phrase's one-word changes encoded on their own, the first MAX_ALTS); caches never hold them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

from ..errors import UnbagError
from ..models.base import Backend, weights_id
from ..utils import atomic_dir, read_json

SHARD = 8192
FORMAT = "unbag-features"


class ShardWriter:
    """Appends rows of fields and writes each full SHARD of rows to `{field}-{k:05d}.npy` (features as fp16)."""

    def __init__(self, folder: Path):
        self.folder, self.buf, self.fields, self.rows, self.shards = Path(folder), {}, {}, 0, 0

    def add(self, fields: dict[str, np.ndarray]) -> None:
        for name, arr in fields.items():
            if arr.dtype in (np.float32, np.float64):
                arr = arr.astype(np.float16)
            self.buf.setdefault(name, []).append(arr)
            self.fields[name] = {"dtype": str(arr.dtype), "shape": list(arr.shape[1:])}
        self.rows += len(next(iter(fields.values())))
        while self.rows - self.shards * SHARD >= SHARD:
            self._flush(SHARD)

    def _flush(self, n: int) -> None:
        for name, parts in self.buf.items():
            arr = np.concatenate(parts)
            np.save(self.folder / f"{name}-{self.shards:05d}.npy", np.ascontiguousarray(arr[:n]))
            self.buf[name] = [arr[n:]]
        self.shards += 1

    def finish(self) -> dict:
        """Write the rows left; the index's `fields` entry (dtype and row shape per field)."""
        if self.rows > self.shards * SHARD:
            self._flush(self.rows - self.shards * SHARD)
        return self.fields


def index_record(backend: Backend, rows: int, fields: dict, meta: dict) -> dict:
    """A cache's index.json: format, backbone and its weights hash, rows, shard size, fields, `meta`."""
    return {"format": FORMAT, "version": 1, "backbone": backend.spec, "backbone_id": weights_id(backend),
            "rows": rows, "shard_rows": SHARD, "fields": fields, **meta}


def write(out: str | os.PathLike, backend: Backend, fields: dict[str, np.ndarray], meta: dict,
          overwrite: bool = False) -> Path:
    """Write fields as shards (features as fp16) with an index, atomically."""
    with atomic_dir(out, "features", overwrite) as tmp:
        shards = ShardWriter(tmp)
        shards.add(fields)
        index = index_record(backend, shards.rows, shards.finish(), meta)
        (tmp / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return Path(out)


class FeatureCache:
    """Read access to a cache: memory-mapped shards, rows fetched by index."""

    def __init__(self, root: str | os.PathLike, backend: Backend | None = None):
        self.root = Path(root)
        self.index = read_json(self.root / "index.json", "not a feature cache (no index.json); build one "
                               "with `unbag features`")
        if not isinstance(self.index, dict) or self.index.get("format") != FORMAT:
            raise UnbagError(f"{self.root}/index.json: field 'format' is not {FORMAT!r}")
        if backend is not None:
            self.check(backend.spec, weights_id(backend))
        self.rows = self.index["rows"]
        self._shards = {name: [np.load(p, mmap_mode="r") for p in sorted(self.root.glob(f"{name}-*.npy"))]
                        for name in self.index["fields"]}

    def check(self, spec: str, ident: str) -> None:
        """Refuse a cache built from another backbone."""
        if self.index["backbone_id"] != ident:
            raise UnbagError(f"{self.root}: cache built for backbone {self.index['backbone']!r} "
                             f"(weights {self.index['backbone_id'][:12]}), not for {spec!r} "
                             f"(weights {ident[:12]}); rebuild it with `unbag features --model {spec}`")

    def get(self, name: str, idx: np.ndarray) -> torch.Tensor:
        """Rows `idx` of a field as a tensor (float32 for features)."""
        shards, per = self._shards[name], self.index["shard_rows"]
        idx = np.asarray(idx)
        parts = [shards[i // per][i % per] for i in idx.tolist()]
        arr = np.stack(parts) if parts else np.zeros((0,) + tuple(self.index["fields"][name]["shape"]))
        t = torch.from_numpy(np.ascontiguousarray(arr))
        return t.float() if t.dtype == torch.float16 else t
