"""SWAP test items in the 3D world: CLEVR scenes, two images x two captions that differ only in binding.

As in the flat world (swap.py), image 0 shows A with x and B with y, image 1 A with y and B with x,
and caption i is true of image i only; both images share the camera, the lights and every object
not swapped. Categories: color, size, material (positions kept), count (the numbers of two groups
swapped, the groups placed again) and relation (A and B trade places; CLEVR's relations: left of,
right of, in front of, behind, along the camera's axes on the ground). A and B share every
attribute but the swapped one (attributes, count), so no global statistic separates the images.

Each scene may hold 0-2 distractors that the captions do not name: objects of the third shape, so
that no caption phrase can be read off them; they never carry a held-out combination.

Held-out combinations (docs/ctrl-format.md), anchored on CLEVR-CoGenT (Johnson et al. 2017,
arXiv 1612.06890): its condition A (seen) gives cubes gray/blue/brown/yellow and cylinders
red/green/purple/cyan, spheres every colour; condition B's swapped palettes are unbag's held-out
colour-shape pairs, so unbag's OOD colour split is CoGenT's A -> B test. CoGenT holds out no size
or material; unbag holds out one pair of each, as its flat world does (small cylinder, metal cube:
a metal cube is where metal is hardest to read, so the material split tests the hard case).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import captions as cap
from .render3d import CLEVR_COLORS, PX_3D, SCALE, Obj3D, Scene3D, instances, jittered, visible
from .scene3d import MATERIALS3D, SHAPES3D, TRIES, min_visible, placed
from .worlds import item_id

CATEGORIES = ("color", "size", "material", "count", "relation")
SPLITS = ("id", "ood")
COLORS3D = tuple(CLEVR_COLORS)
SIZES3D = tuple(SCALE)
VALUES = {"color": COLORS3D, "size": SIZES3D, "material": MATERIALS3D}
COUNT_PAIRS = ((1, 2), (2, 1), (1, 3), (3, 1))
RELATIONS3D = ("to the left of", "to the right of", "in front of", "behind")
COGENT_A = {"cube": ("gray", "blue", "brown", "yellow"), "cylinder": ("red", "green", "purple", "cyan")}
HELD_OUT = {
    "color": {(c, "cube") for c in COGENT_A["cylinder"]} | {(c, "cylinder") for c in COGENT_A["cube"]},
    "size": {("small", "cylinder")},
    "material": {("metal", "cube")},
}
RELATION_MARGIN = 0.2  # CLEVR: j is left of i when (p_j - p_i) . left > 0.2


def held_out(o: Obj3D) -> list[str]:
    """The held-out combinations an object carries, e.g. ['red cube']."""
    return [f"{getattr(o, a)} {o.shape}" for a, pairs in HELD_OUT.items() if (getattr(o, a), o.shape) in pairs]


def scene_held_out(s: Scene3D) -> list[str]:
    return sorted({h for o in s.objects for h in held_out(o)})


@dataclass
class SwapItem3D:
    """One 3D SWAP item: its two scenes, captions and segments, and per image the instance map."""
    id: str
    split: str
    category: str
    scenes: list[Scene3D]
    captions: list[str]
    segments: list[list[dict]]
    instances: list[np.ndarray]
    px: int

    def held_out(self) -> list[str]:
        return sorted({h for s in self.scenes for h in scene_held_out(s)})


def relation_holds(a: Obj3D, rel: str, b: Obj3D, left: np.ndarray, front: np.ndarray,
                   margin: float = RELATION_MARGIN) -> bool:
    """Whether 'a REL b' is true by CLEVR's definition: a's offset from b along the camera's ground
    axis of REL exceeds the margin."""
    v = np.array([a.x - b.x, a.y - b.y, 0.0])
    along = {"to the left of": v @ left, "to the right of": -(v @ left), "in front of": v @ front,
             "behind": -(v @ front)}
    if rel not in along:
        raise ValueError(f"unknown relation {rel!r}")
    return bool(along[rel] > margin)


def item_rng(seed: int, split: str, category: str, index: int) -> np.random.Generator:
    """Independent stream per item (3 marks the 3D world), so a bigger build extends a smaller one."""
    return np.random.default_rng([seed, 3, SPLITS.index(split), CATEGORIES.index(category), index])


def random_obj(rng: np.random.Generator, shape: str, allow_held_out: bool, **fixed: str) -> Obj3D:
    """An object of `shape` at the origin with random attributes, honouring fixed values."""
    for _ in range(1000):
        o = Obj3D(shape, fixed.get("color") or str(rng.choice(COLORS3D)), fixed.get("size") or str(rng.choice(SIZES3D)),
                  fixed.get("material") or str(rng.choice(MATERIALS3D)), 0.0, 0.0)
        if allow_held_out or not held_out(o):
            return o
    raise ValueError(f"no seen combination satisfies shape={shape} {fixed}")


def positions(rng, objs: list[Obj3D], fixed: list[Obj3D], left, front, as_large: bool) -> list[Obj3D] | None:
    """`objs` at CLEVR positions around the already placed `fixed`, each probed as large when
    `as_large` (so its size can later be swapped), or None."""
    out: list[Obj3D] = []
    for a in objs:
        for _ in range(TRIES):
            o = replace(a, x=float(rng.uniform(-3, 3)), y=float(rng.uniform(-3, 3)), angle=float(rng.uniform(0, 2 * np.pi)))
            probe = replace(o, size="large") if as_large else o
            others = [replace(p, size="large") if as_large else p for p in fixed + out]
            if placed(rng, others, probe, left, front):
                out.append(o)
                break
        else:
            return None
    return out


def _visible(scene: Scene3D, px: int) -> np.ndarray | None:
    """The scene's instance map when every object keeps CLEVR's minimum visible pixels, else None."""
    inst = instances(scene, px)
    counts = np.bincount(inst.ravel(), minlength=len(scene.objects) + 1)[1:]
    return inst if (counts >= min_visible(px)).all() else None


def _distractors(rng, named: list[str]) -> list[Obj3D]:
    third = [s for s in SHAPES3D if s not in named]
    return [random_obj(rng, str(rng.choice(third)), allow_held_out=False) for _ in range(int(rng.integers(0, 3)))]


def _attribute_item(rng, category: str, cam, lights):
    a_shape, b_shape = (str(s) for s in rng.choice(SHAPES3D, size=2, replace=False))
    x, y = (str(v) for v in rng.choice(VALUES[category], size=2, replace=False))
    a = random_obj(rng, a_shape, allow_held_out=True, **{category: x})
    b = replace(a, shape=b_shape, **{category: y})
    left, front = cam.ground_axes()
    objs = positions(rng, [a, b] + _distractors(rng, [a_shape, b_shape]), [], left, front, as_large=True)
    if objs is None:
        return None
    pa, pb, rest = objs[0], objs[1], objs[2:]
    scenes = [Scene3D(tuple([pa, pb] + rest), cam, lights),
              Scene3D(tuple([replace(pa, **{category: y}), replace(pb, **{category: x})] + rest), cam, lights)]
    template = str(rng.choice(cap.TEMPLATES))
    order = [0, 1] if rng.random() < 0.5 else [1, 0]
    return scenes, [cap.list_caption(list(s.objects), order, template) for s in scenes]


def _count_item(rng, cam, lights):
    a_shape, b_shape = (str(s) for s in rng.choice(SHAPES3D, size=2, replace=False))
    a = random_obj(rng, a_shape, allow_held_out=True)
    b = replace(a, shape=b_shape)  # the groups differ in shape only: no colour-area shortcut
    x, y = COUNT_PAIRS[rng.integers(len(COUNT_PAIRS))]
    template = str(rng.choice(cap.TEMPLATES))
    left, front = cam.ground_axes()
    rest = positions(rng, _distractors(rng, [a_shape, b_shape]), [], left, front, as_large=False)
    if rest is None:
        return None
    scenes, texts = [], []
    for na, nb in ((x, y), (y, x)):
        objs = positions(rng, [a] * na + [b] * nb, rest, left, front, as_large=False)
        if objs is None:
            return None
        scenes.append(Scene3D(tuple(objs + rest), cam, lights))
        texts.append(cap.count_caption(objs, [list(range(na)), list(range(na, na + nb))], template))
    return scenes, texts


def _relation_item(rng, cam, lights):
    a_shape, b_shape = (str(s) for s in rng.choice(SHAPES3D, size=2, replace=False))
    a_color, b_color = (str(c) for c in rng.choice(COLORS3D, size=2, replace=False))
    a = random_obj(rng, a_shape, allow_held_out=True, color=a_color)
    b = random_obj(rng, b_shape, allow_held_out=True, color=b_color)
    rel = str(rng.choice(RELATIONS3D))
    left, front = cam.ground_axes()
    extra = _distractors(rng, [a_shape, b_shape])
    for _ in range(TRIES):
        objs = positions(rng, [a, b] + extra, [], left, front, as_large=True)
        if objs and relation_holds(objs[0], rel, objs[1], left, front):
            break
    else:
        return None
    pa, pb, rest = objs[0], objs[1], objs[2:]
    scenes = [Scene3D(tuple([pa, pb] + rest), cam, lights),
              Scene3D(tuple([replace(pa, x=pb.x, y=pb.y), replace(pb, x=pa.x, y=pa.y)] + rest), cam, lights)]
    return scenes, [cap.relation_caption(list(scenes[0].objects), 0, rel, 1),
                    cap.relation_caption(list(scenes[1].objects), 1, rel, 0)]


def _relevant_held_out(scenes: list[Scene3D], category: str) -> bool:
    """OOD condition: an attribute item must use a held-out pair *of the swapped attribute*."""
    if category in HELD_OUT:
        return any((getattr(o, category), o.shape) in HELD_OUT[category] for s in scenes for o in s.objects)
    return any(scene_held_out(s) for s in scenes)


def build_item(seed: int, split: str, category: str, index: int, px: int = PX_3D) -> SwapItem3D:
    """Deterministic 3D SWAP item `index` of (split, category) for a world seed, checked at `px`
    (every object keeps CLEVR's minimum visible pixels in both images)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; expected one of {CATEGORIES}")
    rng = item_rng(seed, split, category, index)
    ood = split == "ood"
    make = {"count": _count_item, "relation": _relation_item}.get(category)
    for _ in range(10_000):
        cam, lights = jittered(rng)
        made = make(rng, cam, lights) if make else _attribute_item(rng, category, cam, lights)
        if made is None:
            continue
        scenes, texts = made
        any_held_out = any(scene_held_out(s) for s in scenes)
        if not ((ood and _relevant_held_out(scenes, category)) or (not ood and not any_held_out)):
            continue
        maps = [_visible(s, px) for s in scenes]
        if any(m is None for m in maps):
            continue
        return SwapItem3D(item_id(split, category, index), split, category, scenes, [t for t, _ in texts],
                          [s for _, s in texts], maps, px)
    raise RuntimeError(f"could not build 3D {split}/{category} item {index}")


def object_records(scene: Scene3D, inst: np.ndarray) -> list[dict]:
    """Per object: attributes, 3D centre `xyz`, rotation `angle` (radians), the box of its visible
    pixels and their count (format version 2)."""
    return [{"shape": o.shape, "color": o.color, "size": o.size, "material": o.material,
             "xyz": [round(v, 6) for v in o.centre], "angle": round(o.angle, 6), **v}
            for o, v in zip(scene.objects, visible(inst, len(scene.objects)))]


def scene_record(scene: Scene3D) -> dict:
    """Camera and lights of a scene, so it can be rendered again."""
    return {"camera": [round(c, 6) for c in scene.camera.position],
            "lights": [[round(c, 6) for c in lt.position] + [lt.intensity] for lt in scene.lights]}


def scene_from_record(objects: list[dict], scene: dict) -> Scene3D:
    """The Scene3D a format-2 record describes (its objects, camera and lights)."""
    from .render3d import Camera, Light
    objs = tuple(Obj3D(o["shape"], o["color"], o["size"], o["material"], o["xyz"][0], o["xyz"][1], o["angle"])
                 for o in objects)
    return Scene3D(objs, Camera(tuple(scene["camera"])),
                   tuple(Light(tuple(lt[:3]), lt[3]) for lt in scene["lights"]))


def hidden_share(scene: Scene3D, inst: np.ndarray) -> list[float]:
    """Per object, the share of its pixels that others hide (0: fully in view), from its
    instance map in the scene and alone."""
    px = inst.shape[0]
    out = []
    for k, o in enumerate(scene.objects, 1):
        alone = int((instances(Scene3D((o,), scene.camera, scene.lights), px) == 1).sum())
        out.append(1 - int((inst == k).sum()) / alone if alone else 0.0)
    return out
