"""CLEVR's placement rules for 3D scenes (Johnson et al. 2017, arXiv 1612.06890, render_images.py).

Objects stand at x, y uniform in [-3, 3] with a random rotation about the vertical; each centre is
at least `MIN_DIST` beyond both footprint radii from every other, and at least `MARGIN` apart
along the camera's left and front axes (so left/right/front/behind are never ambiguous); every
object keeps a minimum number of visible pixels (CLEVR's 200 at 320x240, scaled to the image
area), else the whole scene is placed again.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .render3d import CLEVR_COLORS, PX_3D, SCALE, Obj3D, Scene3D, instances, jittered, shaded

SHAPES3D = ("cube", "sphere", "cylinder")
MATERIALS3D = ("rubber", "metal")
MIN_DIST, MARGIN = 0.25, 0.4
MIN_VISIBLE_CLEVR = 200 / (320 * 240)  # CLEVR's 200 visible pixels at 320x240, as a share of the image
TRIES = 50


def min_visible(px: int) -> int:
    """CLEVR's minimum visible pixels, scaled to a px x px image (at least 4)."""
    return max(4, round(MIN_VISIBLE_CLEVR * px * px))


def placed(rng: np.random.Generator, objs: list[Obj3D], new: Obj3D, left: np.ndarray, front: np.ndarray) -> bool:
    """Whether `new` keeps CLEVR's distance and margins from every object in `objs`."""
    for o in objs:
        dx, dy = new.x - o.x, new.y - o.y
        if math.hypot(dx, dy) - new.radius - o.radius < MIN_DIST:
            return False
        v = np.array([dx, dy, 0.0])
        if abs(v @ left) < MARGIN or abs(v @ front) < MARGIN:
            return False
    return True


def random_object(rng: np.random.Generator) -> Obj3D:
    return Obj3D(str(rng.choice(SHAPES3D)), str(rng.choice(list(CLEVR_COLORS))), str(rng.choice(list(SCALE))),
                 str(rng.choice(MATERIALS3D)), 0.0, 0.0)


def place(rng: np.random.Generator, attrs: list[Obj3D], px: int = PX_3D, draw: bool = True
          ) -> tuple[Scene3D, np.ndarray | None, np.ndarray]:
    """A scene of objects with the given attributes placed by CLEVR's rules, with its picture
    (None unless `draw`) and instance map; raises RuntimeError when no placement keeps every object
    visible in TRIES."""
    for _ in range(TRIES):
        cam, lights = jittered(rng)
        left, front = cam.ground_axes()
        objs: list[Obj3D] = []
        for a in attrs:
            for _ in range(TRIES):
                o = Obj3D(a.shape, a.color, a.size, a.material, float(rng.uniform(-3, 3)), float(rng.uniform(-3, 3)),
                          float(rng.uniform(0, 2 * math.pi)))
                if placed(rng, objs, o, left, front):
                    objs.append(o)
                    break
            else:
                break
        if len(objs) < len(attrs):
            continue
        scene = Scene3D(tuple(objs), cam, lights)
        inst = instances(scene, px)
        counts = np.bincount(inst.ravel(), minlength=len(objs) + 1)[1:]
        if (counts >= min_visible(px)).all():
            return scene, shaded(scene, px) if draw else None, inst
    raise RuntimeError(f"no placement of {len(attrs)} objects keeps each visible in {TRIES} tries")


def place_drawn(rng: np.random.Generator, draw: Callable[[np.random.Generator], list[Obj3D]], px: int = PX_3D
                ) -> tuple[Scene3D, np.ndarray]:
    """(scene, instance map) of objects drawn by `draw(rng)` and placed by `place`; objects are
    drawn again until a placement keeps every one visible."""
    while True:
        try:
            scene, _, inst = place(rng, draw(rng), px=px, draw=False)
            return scene, inst
        except RuntimeError:  # no placement kept every object visible: draw other objects
            continue
