"""The 3D world, unbag's default: CLEVR-faithful scenes drawn by unbag's ray caster (world/scene3d.py,
render3d.py, swap3d.py, stream3d.py; docs/world3d.md)."""
from __future__ import annotations

from . import World

# the input size of the 3D built-in model: 96 px since 2026-12-06, where a small object is wide
# enough for its shape to be read and counted (docs/model-card.md)
PX = 96

# SGI on CLEVR scenes: one box per object from the proposer learned on the training stream
# (sgi/proposer.py; 90.3% of the objects at IoU 0.5 and 1.0 box per object, where `chroma` finds
# 96.9% with 2.7 boxes each, and every extra box miscounts), masked onto each row's median, the
# empty floor, instead of one flat colour that a model trained on 3D scenes cannot read objects
# against (docs/world3d.md); a 3D count picture holds objects no phrase counts (other colours),
# so a region counts only where it fits a counted description (`counts="fit"`: count items of the
# stage-4 model, OOD 31 -> 43; on the flat world, where every object is counted, it would cost 9);
# one view per region: on two 3D models a second phase cost 1.4 and 2.2 points OOD and 12% of the time
SGI = {"regions": "objects", "fill": "rows", "counts": "fit", "phases": 1}



def parts() -> dict:
    """Its parts (World.parts): the ray caster's modules."""
    from .. import io, render3d, scene3d, stream3d, swap3d
    return {"renderer": render3d, "stream": stream3d, "swap": swap3d, "shapes": scene3d.SHAPES3D,
            "held_out": swap3d.held_out, "item": io.item3d, "boxes": render3d.object_boxes, "build": io.build3d}


def distribution_names() -> tuple:
    from ..stream import DISTRIBUTIONS  # stream3d draws the flat stream's distributions
    return DISTRIBUTIONS


WORLD = World(
    name="3d",
    about="CLEVR-faithful 3D scenes (docs/world3d.md)",
    px=PX,
    ctrl_version=2,
    masks=True,
    parallel=True,
    cached=True,
    sgi=SGI,
    parts=parts,
    distribution_names=distribution_names,
)
WORLDS = {WORLD.name: WORLD}
