import itertools

import numpy as np
import pytest

from unbag.world.render import render
from unbag.world.scene import SHAPES, SIZES, Obj, Scene


def _alone(shape: str, size: str) -> np.ndarray:
    return render(Scene([Obj(shape, "red", size, "rubber", 0.5, 0.5)], seed=1), 64).astype(int)


@pytest.mark.parametrize("size", SIZES)
def test_every_two_shapes_differ_in_clearly_changed_pixels(size):
    # at render version 1 a small cube and a small sphere differed in no pixel by more than 60
    # levels, and the built-in model could not tell them apart (SGI size ID 79.8)
    for a, b in itertools.combinations(SHAPES, 2):
        changed = (np.abs(_alone(a, size) - _alone(b, size)).max(-1) > 60).sum()
        assert changed >= 10, (a, b, size, changed)
