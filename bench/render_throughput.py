"""Images per second of the 3D ray caster (world/render3d.py) against the flat world's renderer,
measured in one run: CLEVR-placed scenes of 3-6 objects, one process per core, one torch thread each
(placing a scene, with its visibility checks on instance maps at 64 px, is not counted; the
placement rate is printed beside it; a picture is shaded without its instance map, as the
benchmark build draws it).

    .venv/bin/python bench/render_throughput.py --n 200 --procs 2
    .venv/bin/python bench/render_throughput.py --px 224      # a CLIP's side: edges-only 2x2 rays vs every ray

Beside each 3D side it prints the render with every shadow ray traced (no cull by the objects'
cones from the lights), which draws the same bytes.
"""
from __future__ import annotations

import argparse
import time
from multiprocessing import get_context

import numpy as np


def _work(args: tuple[str, int, int, int]) -> tuple[float, float]:
    """(seconds placing, seconds rendering) of n images in one process."""
    kind, px, n, seed = args
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    if kind == "flat":
        from unbag.world.stream import sample
        t = time.perf_counter()
        for k in range(n):
            sample(seed, k, px)  # a stream sample: draws a scene and renders it
        return 0.0, time.perf_counter() - t
    from unbag.world import render3d
    from unbag.world.render3d import shaded
    from unbag.world.scene3d import place, random_object
    if kind == "3d-every-ray":  # the render before 2x2 rays were traced only at edges (version 3 at every side)
        render3d.ADAPTIVE_PX = 10**9
    if kind == "3d-every-shadow-ray":  # the render before shadow rays were culled (the same bytes)
        render3d._may_shadow = lambda p, light, g: torch.ones(len(p), dtype=torch.bool)
    t = time.perf_counter()
    scenes = [place(rng, [random_object(rng) for _ in range(int(rng.integers(3, 7)))], px=64, draw=False)[0]
              for _ in range(n)]
    t_place, t = time.perf_counter() - t, time.perf_counter()
    for s in scenes:
        shaded(s, px)
    return t_place, time.perf_counter() - t


def rate(kind: str, px: int, n: int, procs: int) -> tuple[float, float]:
    """(images rendered per second, scenes placed per second) over `procs` processes."""
    with get_context("spawn").Pool(procs) as pool:
        pool.map(_work, [(kind, px, 2, 99)] * procs)  # warm the imports
        times = pool.map(_work, [(kind, px, n // procs, s) for s in range(procs)])
    per = n // procs
    return procs * per / max(t for _, t in times), procs * per / max(max(p for p, _ in times), 1e-9)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=200, help="images per setting")
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--px", type=int, nargs="+", default=[64, 128], help="picture sides of the 3D ray caster")
    a = p.parse_args()
    flat, _ = rate("flat", 64, a.n, a.procs)
    print(f"flat world, 64 px: {flat:.1f} images/s ({a.procs} processes)")
    for px in a.px:
        n = max(a.procs, a.n if px <= 64 else a.n // 4)
        r, placed = rate("3d", px, n, a.procs)
        print(f"3D ray caster, {px} px: {r:.1f} images/s ({a.procs} processes); flat / 3D = {flat / r:.1f}; "
              f"CLEVR placement (3-6 objects, visibility at 64 px): {placed:.1f} scenes/s")
        every_shadow, _ = rate("3d-every-shadow-ray", px, n, a.procs)
        print(f"  every shadow ray traced at {px} px: {every_shadow:.1f} images/s; culled / every = {r / every_shadow:.2f}x")
        from unbag.world.render3d import ADAPTIVE_PX
        if px >= ADAPTIVE_PX:
            every, _ = rate("3d-every-ray", px, n, a.procs)
            print(f"  every ray traced at {px} px: {every:.1f} images/s; edges only / every ray = {r / every:.2f}x")


if __name__ == "__main__":
    main()
