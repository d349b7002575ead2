"""Training-stream throughput in one run: samples (with twins) per second from the flat stream,
the 3D stream rendered on the fly, and a rendered 3D pool; one process, one torch thread.

    .venv/bin/python bench/stream3d.py --n 200
"""
from __future__ import annotations

import argparse
import tempfile
import time

import torch

from unbag.world import stream, stream3d
from unbag.world.pool3d import PoolStream, build_pool


def rate(src, n: int, dist) -> float:
    t = time.perf_counter()
    for k in range(n):
        s = src.sample(0, k, 64, dist)
        src.twin(0, k, 64, s, dist)
    return n / (time.perf_counter() - t)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=200)
    a = p.parse_args()
    torch.set_num_threads(1)
    flat = rate(stream, a.n, "finetuning")
    live = rate(stream3d, a.n, "finetuning")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        build_pool(f"{d}/p", n=a.n, progress=False)
        built = a.n / (time.perf_counter() - t)
        pooled = rate(PoolStream(f"{d}/p", run_seed=0), a.n, None)
    print(f"samples with twins per second, 64 px, one core ({a.n} each):")
    print(f"  flat stream       {flat:8.1f}")
    print(f"  3D on the fly     {live:8.1f}   (flat / 3D = {flat / live:.0f})")
    print(f"  3D pool, building {built:8.1f}")
    print(f"  3D pool, reading  {pooled:8.1f}   (pool / on the fly = {pooled / live:.0f})")


if __name__ == "__main__":
    main()
