"""The flat world: 2D shapes on grey (world/scene.py, render.py; docs/flat-world.md), unbag's first
world, kept for the flat built-in model and for what it measures alone."""
from __future__ import annotations

from . import World

PX = 64  # the input size of the flat built-in model

def parts() -> dict:
    """Its parts (World.parts): the flat drawing's modules."""
    from .. import io, render, scene, stream, swap
    return {"renderer": render, "stream": stream, "swap": swap, "shapes": scene.SHAPES, "held_out": swap.held_out,
            "item": io.flat_item, "boxes": scene.object_boxes, "build": io.build_flat}


def distribution_names() -> tuple:
    from ..stream import DISTRIBUTIONS
    return DISTRIBUTIONS


WORLD = World(
    name="flat",
    about="2D shapes on grey (docs/flat-world.md)",
    px=PX,
    ctrl_version=1,
    masks=False,
    parallel=False,
    sgi={},  # SGIConfig's defaults were chosen on this world (docs/sgi.md)
    parts=parts,
    distribution_names=distribution_names,
)
WORLDS = {WORLD.name: WORLD}
