"""SWAP test items: two images x two captions that differ only in which object has which value.

Image 0 shows A with x and B with y; image 1 shows A with y and B with x; caption i describes
image i with the same template and object order. Categories: color, size, material (attribute
swaps, positions kept), count (numbers swapped between two groups, positions re-sampled) and
relation (positions of A and B swapped; captions swap subject and object). In the attribute and
count categories A and B differ only in shape and the swapped value, so no global statistic (how
much of a colour, how many large things) separates the two images: only binding does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import captions as cap
from .scene import COLORS, HELD_OUT, MATERIALS, SHAPES, SIZES, Scene, place, random_attrs
from .worlds import item_id

CATEGORIES = ("color", "size", "material", "count", "relation")
SPLITS = ("id", "ood")
VALUES = {"color": tuple(COLORS), "size": SIZES, "material": MATERIALS}
COUNT_PAIRS = ((1, 2), (2, 1), (1, 3), (3, 1))


def held_out(o) -> list[str]:
    """The held-out combinations an object shows (worlds/flat.py)."""
    return o.held_out()


@dataclass
class SwapItem:
    """One SWAP test item; caption i is true of scene i only."""
    id: str
    split: str
    category: str
    scenes: list[Scene]
    captions: list[str]
    segments: list[list[dict]]

    def held_out(self) -> list[str]:
        return sorted({h for s in self.scenes for h in s.held_out()})


def item_rng(seed: int, split: str, category: str, index: int) -> np.random.Generator:
    """Independent stream per item, so a build with more items per category extends a smaller one."""
    return np.random.default_rng([seed, SPLITS.index(split), CATEGORIES.index(category), index])


def _relevant_held_out(scenes: list[Scene], category: str) -> bool:
    """OOD condition: an attribute item must use a held-out pair *of the swapped attribute*."""
    if category in HELD_OUT:
        pairs = HELD_OUT[category]
        return any((getattr(o, category), o.shape) in pairs for s in scenes for o in s.objects)
    return any(s.held_out() for s in scenes)


def _attribute_item(rng, category: str, seed: int):
    a_shape, b_shape = rng.choice(SHAPES, size=2, replace=False)
    x, y = rng.choice(VALUES[category], size=2, replace=False)
    # A and B share every attribute but the swapped one: otherwise "small cyan" vs "large cyan"
    # could be told apart by how much cyan there is, without binding anything to an object
    a = random_attrs(rng, allow_held_out=True, shape=str(a_shape), **{category: str(x)})
    b = a.with_(shape=str(b_shape), **{category: str(y)})
    placed = place(rng, [a, b], max_radius=True)
    if placed is None:
        return None
    a, b = placed
    swapped = [a.with_(**{category: str(y)}), b.with_(**{category: str(x)})]
    scenes = [Scene([a, b], seed), Scene(swapped, seed)]
    template = str(rng.choice(cap.TEMPLATES))
    order = [0, 1] if rng.random() < 0.5 else [1, 0]
    texts = [cap.list_caption(s.objects, order, template) for s in scenes]
    return scenes, texts


def _count_item(rng, seed: int):
    a_shape, b_shape = rng.choice(SHAPES, size=2, replace=False)
    a = random_attrs(rng, allow_held_out=True, shape=str(a_shape))
    b = a.with_(shape=str(b_shape))  # the groups differ in shape only: no colour-area shortcut
    x, y = COUNT_PAIRS[rng.integers(len(COUNT_PAIRS))]
    template = str(rng.choice(cap.TEMPLATES))
    scenes, texts = [], []
    for na, nb in ((x, y), (y, x)):
        placed = place(rng, [a] * na + [b] * nb)
        if placed is None:
            return None
        scenes.append(Scene(placed, seed))
        groups = [list(range(na)), list(range(na, na + nb))]
        texts.append(cap.count_caption(placed, groups, template))
    return scenes, texts


def _relation_item(rng, seed: int):
    a_shape, b_shape = rng.choice(SHAPES, size=2, replace=False)
    a_color, b_color = rng.choice(list(COLORS), size=2, replace=False)
    a = random_attrs(rng, allow_held_out=True, shape=str(a_shape), color=str(a_color))
    b = random_attrs(rng, allow_held_out=True, shape=str(b_shape), color=str(b_color))
    rel = str(rng.choice(cap.RELATIONS))
    for _ in range(100):
        placed = place(rng, [a, b], max_radius=True)
        if placed and cap.relation_holds(placed[0], rel, placed[1]):
            break
    else:
        return None
    pa, pb = placed
    scenes = [Scene([pa, pb], seed),
              Scene([pa.with_(x=pb.x, y=pb.y), pb.with_(x=pa.x, y=pa.y)], seed)]
    texts = [cap.relation_caption(scenes[0].objects, 0, rel, 1),
             cap.relation_caption(scenes[1].objects, 1, rel, 0)]
    return scenes, texts


def build_item(seed: int, split: str, category: str, index: int) -> SwapItem:
    """Deterministic SWAP item `index` of (split, category) for a world seed."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; expected one of {CATEGORIES}")
    rng = item_rng(seed, split, category, index)
    ood = split == "ood"
    for _ in range(10_000):
        scene_seed = int(rng.integers(2**31))
        if category in VALUES:
            made = _attribute_item(rng, category, scene_seed)
        elif category == "count":
            made = _count_item(rng, scene_seed)
        else:
            made = _relation_item(rng, scene_seed)
        if made is None:
            continue
        scenes, texts = made
        has_held_out = any(s.held_out() for s in scenes)
        if (ood and _relevant_held_out(scenes, category)) or (not ood and not has_held_out):
            return SwapItem(id=item_id(split, category, index), split=split, category=category,
                            scenes=scenes, captions=[t for t, _ in texts],
                            segments=[s for _, s in texts])
    raise RuntimeError(f"could not build {split}/{category} item {index}")
