"""CLIP_benchmark's webdataset layout, read in place: DIR/<split>/nshards.txt and its numbered
tar shards, each sample's files grouped by key (zero-shot classification and retrieval both read
it: benchmarks/classification.py, benchmarks/retrieval.py)."""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError
from ..utils import opened, read_text


def _wds_shards(root: Path, split: str) -> list[Path]:
    f = root / split / "nshards.txt"
    if not f.is_file():
        raise UnbagError(f"{f}: not found (CLIP_benchmark's webdataset layout: DIR/{split}/nshards.txt and "
                         f"DIR/{split}/0.tar ...)")
    try:
        n = int(read_text(f).strip())
    except ValueError:
        raise UnbagError(f"{f}:1: expected the number of shards") from None
    shards = [root / split / f"{k}.tar" for k in range(n)]
    missing = [s.name for s in shards if not s.is_file()]
    if missing:
        raise UnbagError(f"{root / split}: nshards.txt says {n} shards; missing {', '.join(missing[:3])}")
    return shards


def wds_samples(root: Path, split: str = "test"):
    """(shard, key, {extension: bytes}) of every sample of a CLIP_benchmark webdataset split."""
    import tarfile
    for shard in _wds_shards(root, split):
        groups: dict[str, dict[str, bytes]] = {}
        try:
            with tarfile.open(opened(shard)) as tar:
                for m in tar:
                    if m.isfile():
                        key, _, ext = m.name.partition(".")
                        groups.setdefault(key, {})[ext.lower()] = tar.extractfile(m).read()
        except tarfile.TarError as e:
            raise UnbagError(f"{shard}: not a readable tar file ({e})") from None
        for key, parts in groups.items():
            yield shard, key, parts


def wds_image(parts: dict[str, bytes], where: str) -> bytes:
    for ext in ("webp", "png", "jpg", "jpeg"):
        if ext in parts:
            return parts[ext]
    raise UnbagError(f"{where}: no .webp/.png/.jpg/.jpeg image")
