"""The training streams of the 3D world (`world@3d:pretraining`, `world@3d:finetuning`): CLEVR scenes
rendered on the fly, with the flat streams' distributions and caption grammar (stream.py).

`pretraining` may render and name every combination; `finetuning` never renders or names the
held-out ones (swap3d.HELD_OUT: CoGenT's condition B colours, small cylinder, metal cube), so the
3D ctrl OOD split is out of every method's and head's training distribution. Pretraining on
`finetuning` too is the strict setting. `pretraining-web` varies the captions as in the flat world;
`pretraining-siblings` builds half of its scenes around two siblings, as the flat world's does.

Scenes: 30% one object, 20% one or two groups of identical objects (counts), 50% two to five
random objects, placed by CLEVR's rules with every object visible (scene3d.py). Relations are
CLEVR's (left of / right of / in front of / behind, along the camera's ground axes).

Sample k depends only on (seed, k, distribution), as in the flat world, so a resumed run sees the
data an uninterrupted run would and workers split the index range without coordination. Each
sample is rendered on one torch thread (the same bytes in a worker or in the main process).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import captions as cap
from .render3d import PX_3D, instances, picture
from .scene3d import SHAPES3D, min_visible, place_drawn, placed
from .stream import DISTRIBUTIONS, Distribution, Sample, Twin, _swaps, distribution  # noqa: F401 (a world's stream module names its distributions)
from .swap3d import RELATIONS3D, VALUES, held_out, positions, random_obj, relation_holds


def training_objects(rng: np.random.Generator, allow_held_out: bool) -> list:
    """The objects of a random training scene (at the origin; placement comes after)."""
    r = rng.random()
    pick = lambda shape=None: random_obj(rng, shape or str(rng.choice(SHAPES3D)), allow_held_out)  # noqa: E731
    if r < 0.3:
        return [pick()]
    if r < 0.5:
        a, b = (pick(str(s)) for s in rng.choice(SHAPES3D, size=2, replace=False))
        n1 = int(rng.integers(1, 5))
        return [a] * n1 + [b] * int(rng.integers(0, 5 - n1))
    return [pick() for _ in range(int(rng.integers(2, 6)))]


def sibling_objects(rng: np.random.Generator, allow_held_out: bool) -> list:
    """Two siblings (alike in every attribute but their shape and one more, as a SWAP item's A and
    B are; two in three share their colour) and zero to two random objects, in random order: a
    scene that asks for an object's shape next to a same-looking neighbour (stream.sibling_scene)."""
    while True:
        a_shape, b_shape = (str(s) for s in rng.choice(SHAPES3D, size=2, replace=False))
        attr = str(rng.choice(list(VALUES)))
        a = random_obj(rng, a_shape, True)
        b = replace(a, shape=b_shape, **{attr: str(rng.choice([v for v in VALUES[attr] if v != getattr(a, attr)]))})
        objs = [a, b] + [random_obj(rng, str(rng.choice(SHAPES3D)), allow_held_out)
                         for _ in range(int(rng.integers(0, 3)))]
        if allow_held_out or not any(held_out(o) for o in objs):
            return [objs[i] for i in rng.permutation(len(objs))]


def training_scene(rng: np.random.Generator, px: int, allow_held_out: bool, siblings: bool = False):
    """(scene, instance map) of a random training scene placed by CLEVR's rules (built around two
    siblings when `siblings`)."""
    draw = sibling_objects if siblings else training_objects
    return place_drawn(rng, lambda r: draw(r, allow_held_out), px)


def _holds(scene):
    left, front = scene.camera.ground_axes()
    return lambda a, rel, b: relation_holds(a, rel, b, left, front)


def describe(scene, rng: np.random.Generator) -> str:
    """A further random caption of a 3D training scene."""
    objs = list(scene.objects)
    return cap.apply(cap.choose_form(objs, rng, cap.TEMPLATES, RELATIONS3D, _holds(scene)), objs)[0]


def sample(seed: int, index: int, px: int = PX_3D, dist: str | Distribution = "finetuning") -> Sample:
    """Training sample `index` of the 3D stream with this seed, from distribution `dist`."""
    d = distribution(dist)
    rng = np.random.default_rng([seed, 3, 7, index])  # 3: the 3D world; 7: apart from test items
    # a sibling scene draws from its own generator, so the other samples stay the plain stream's
    siblings = False
    if d.siblings and (sib := np.random.default_rng([seed, 3, 13, index])).random() < d.siblings:
        rng, siblings = sib, True
    scene, _ = training_scene(rng, px, d.held_out, siblings)
    objs = list(scene.objects)
    form = cap.choose_form(objs, rng, d.templates, RELATIONS3D, _holds(scene))
    if d.partial:
        form = cap.partial_form(form, np.random.default_rng([seed, 3, 11, index]), d.partial)
    text, segs = cap.apply(form, objs)
    return Sample(picture(scene, px), text, segs, scene, form)


def twin(seed: int, index: int, px: int = PX_3D, s: Sample | None = None,
         dist: str | Distribution = "finetuning") -> Twin | None:
    """A binding-swap twin of sample `index`: the same camera and lights, one swap (attribute,
    count or relation) that keeps CLEVR's rules and every object visible, stays inside the
    distribution and changes the caption; None when the scene has none."""
    d = distribution(dist)
    s = s or sample(seed, index, px, d)
    rng = np.random.default_rng([seed, 3, 8, index])
    scene = s.scene
    left, front = scene.camera.ground_axes()
    options = list(_swaps(list(scene.objects), s.form))
    for k in rng.permutation(len(options)):
        category, objs, form = options[k]
        if category == "count":  # the groups placed again under the same camera
            objs = positions(rng, objs, [], left, front, as_large=False)
            if objs is None:
                continue
        elif category == "size" and not all(placed(rng, objs[:n], o, left, front) for n, o in enumerate(objs)):
            continue
        if not d.held_out and any(held_out(o) for o in objs):
            continue
        text, segs = cap.apply(form, objs)
        if text == s.caption:
            continue
        new = replace(scene, objects=tuple(objs))
        counts = np.bincount(instances(new, px).ravel(), minlength=len(objs) + 1)[1:]
        if (counts < min_visible(px)).any():
            continue
        return Twin(picture(new, px), text, segs, new, category)
    return None
