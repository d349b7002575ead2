"""Scenes of the controlled world: vocabulary, held-out combinations, object placement."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

SHAPES = ("cube", "sphere", "cylinder", "cone", "star")
COLORS = {
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (45, 85, 225),
    "yellow": (235, 215, 40),
    "purple": (140, 60, 195),
    "cyan": (40, 205, 215),
    "orange": (245, 140, 25),
    "brown": (125, 75, 35),
}
SIZES = ("small", "large")
MATERIALS = ("rubber", "metal")
ATTRIBUTES = ("size", "color", "material")

# Radius in units of the image side: large objects are 1.7x small ones, so absolute size is a
# reliable cue that a region-masked encoder input keeps.
RADIUS = {"small": 0.085, "large": 0.145}

# Held-out attribute-object combinations (docs/ctrl-format.md): never rendered or named in training, and
# every OOD test item uses at least one. Each color is held out for exactly one shape.
HELD_OUT = {
    "color": {("red", "cube"), ("green", "sphere"), ("blue", "cylinder"), ("yellow", "cone"),
              ("purple", "star"), ("cyan", "cube"), ("orange", "sphere"), ("brown", "cone")},
    "size": {("small", "cylinder"), ("large", "star")},
    "material": {("metal", "cube"), ("rubber", "cone")},
}


@dataclass(frozen=True)
class Obj:
    """One object: its attributes, centre (x, y in [0, 1]) and optional count group."""
    shape: str
    color: str
    size: str
    material: str
    x: float = 0.5
    y: float = 0.5

    @property
    def radius(self) -> float:
        return RADIUS[self.size]

    def box(self, px: int) -> list[int]:
        """Pixel box [x0, y0, x1, y1] (exclusive end) of the object at side px."""
        r = self.radius * px
        return [max(0, int(np.floor(self.x * px - r))), max(0, int(np.floor(self.y * px - r))),
                min(px, int(np.ceil(self.x * px + r))), min(px, int(np.ceil(self.y * px + r)))]

    def held_out(self) -> list[str]:
        """Names of the held-out combinations this object carries, e.g. ['red cube']."""
        out = []
        for attr, pairs in HELD_OUT.items():
            value = getattr(self, attr)
            if (value, self.shape) in pairs:
                out.append(f"{value} {self.shape}")
        return out

    def with_(self, **kw) -> "Obj":
        return replace(self, **kw)


@dataclass
class Scene:
    """Objects on a background; `seed` fixes the background noise."""
    objects: list[Obj]
    seed: int
    relation: tuple[int, str, int] | None = field(default=None)  # (subject idx, relation, object idx)

    def held_out(self) -> list[str]:
        return sorted({h for o in self.objects for h in o.held_out()})


def random_attrs(rng: np.random.Generator, *, allow_held_out: bool, shape: str | None = None,
                 **fixed: str) -> Obj:
    """Sample an object's attributes (position left at the centre), honouring fixed values."""
    for _ in range(1000):
        o = Obj(shape=shape or str(rng.choice(SHAPES)),
                color=fixed.get("color") or str(rng.choice(list(COLORS))),
                size=fixed.get("size") or str(rng.choice(SIZES)),
                material=fixed.get("material") or str(rng.choice(MATERIALS)))
        if allow_held_out or not o.held_out():
            return o
    raise ValueError(f"no seen combination satisfies shape={shape} {fixed}")


def _fits(o: Obj, placed: list[Obj], margin: float = 0.04) -> bool:
    # a gap of >= 2.5 px at 64 px keeps objects apart for box finders
    # every shape lies inside its [-r, r] square, so separated squares never touch
    return all(max(abs(o.x - p.x), abs(o.y - p.y)) > o.radius + p.radius + margin for p in placed)


def place(rng: np.random.Generator, objs: list[Obj], max_radius: bool = False) -> list[Obj] | None:
    """Give objects non-overlapping positions inside the frame; None if it fails.

    With max_radius, every object is placed as if it were large, so sizes can later be swapped
    between objects without creating overlaps.
    """
    placed: list[Obj] = []
    for o in objs:
        r = RADIUS["large"] if max_radius else o.radius
        for _ in range(200):
            x, y = rng.uniform(r + 0.01, 1 - r - 0.01, size=2)
            cand = o.with_(x=float(x), y=float(y))
            probe = cand.with_(size="large") if max_radius else cand
            if _fits(probe, [p.with_(size="large") if max_radius else p for p in placed]):
                placed.append(cand)
                break
        else:
            return None
    return placed


def object_boxes(scene: Scene, px: int) -> list[list[int]]:
    """Each object's box at px (worlds/flat.py): every flat object is fully visible."""
    return [o.box(px) for o in scene.objects]
