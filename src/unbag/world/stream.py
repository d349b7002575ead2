"""The training stream: random scenes with no held-out combination, rendered on the fly.

Sample k of a stream depends only on (seed, k), so a resumed run sees exactly the data an
uninterrupted run would, and ranks/workers can split the index range without coordination.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import captions as cap
from .render import render
from .scene import SHAPES, Scene, place, random_attrs


@dataclass
class Sample:
    image: np.ndarray  # [px, px, 3] uint8
    caption: str
    segments: list[dict]
    scene: Scene


def training_scene(rng: np.random.Generator) -> Scene:
    """A random scene: 30% one object (what SGI's object regions look like), 20% one or two groups
    of identical objects (counts), 50% two to four random objects."""
    while True:
        r = rng.random()
        if r < 0.3:
            objs = [random_attrs(rng, allow_held_out=False)]
        elif r < 0.5:
            shapes = rng.choice(SHAPES, size=2, replace=False)
            n1 = int(rng.integers(1, 5))
            n2 = int(rng.integers(0, 5 - n1))
            protos = [random_attrs(rng, allow_held_out=False, shape=str(s)) for s in shapes]
            objs = [protos[0]] * n1 + [protos[1]] * n2
        else:
            objs = [random_attrs(rng, allow_held_out=False) for _ in range(int(rng.integers(2, 5)))]
        placed = place(rng, objs)
        if placed is not None:
            return Scene(placed, int(rng.integers(2**31)))


def sample(seed: int, index: int, px: int = 64) -> Sample:
    """Training sample `index` of the stream with this seed."""
    rng = np.random.default_rng([seed, 7, index])  # 7: keeps the stream apart from test items
    scene = training_scene(rng)
    text, segs = cap.describe(scene.objects, rng)
    return Sample(render(scene, px), text, segs, scene)


def batch(seed: int, step: int, size: int, px: int = 64, offset: int = 0) -> list[Sample]:
    """Samples [step*size + offset, ...) of the stream; offset lets ranks take disjoint slices."""
    start = step * size + offset
    return [sample(seed, start + k, px) for k in range(size)]


