"""The training streams: random scenes rendered on the fly, from one of two distributions.

- `pretraining` (the stand-in for web data): every attribute-object combination may be rendered
  and named. The built-in model learns from it. (`pretraining-web` also varies the captions the
  way web captions vary: some name only some attributes, more templates. Measured at 2,000 steps
  of the built-in recipe, it taught the model less: docs/sgi.md. `pretraining-siblings` makes half
  of its scenes hold two "siblings", objects alike in all but shape and one more attribute, as
  CLEVR scenes often do; measured as continued pretraining in docs/heads.md.)
- `finetuning` (the stand-in for COCO): held-out combinations are never rendered or named; every
  method and every head trains on it, so ctrl's OOD split is out of *their* distribution.

Pretraining on `finetuning` too (the held-out combinations out of every training set) asks a
harder question: does the representation itself generalize to unseen combinations (docs/sgi.md)?

Sample k of a stream depends only on (seed, k, distribution), so a resumed run sees exactly the
data an uninterrupted run would, and ranks/workers can split the index range without coordination.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import UnbagError
from . import captions as cap
from .render import render
from .scene import ATTRIBUTES, SHAPES, Scene, _fits, place, random_attrs
from .styles import split_world, world
from .swap import VALUES


@dataclass(frozen=True)
class Distribution:
    """A training distribution of the world."""
    name: str
    held_out: bool  # whether held-out combinations may be rendered and named
    partial: float = 0.0  # share of captions that name only some attributes (web-like)
    templates: tuple[str, ...] = cap.TEMPLATES
    siblings: float = 0.0  # share of scenes built around two siblings (sibling_scene)


DISTRIBUTIONS = {
    "pretraining": Distribution("pretraining", held_out=True),
    # the same scenes with web-like captions: the measured alternative (docs/sgi.md)
    "pretraining-web": Distribution("pretraining-web", held_out=True, partial=0.3,
                                    templates=cap.TEMPLATES + cap.WEB_TEMPLATES),
    # the same scenes, half of them replaced by scenes around two siblings (docs/heads.md)
    "pretraining-siblings": Distribution("pretraining-siblings", held_out=True, siblings=0.5),
    "finetuning": Distribution("finetuning", held_out=False),
}
DEFAULT = "finetuning"


STREAM = "world"  # a stream spec: world[@WORLD][:DIST]


def is_stream(spec: str) -> bool:
    """Whether a data spec names a world stream (world[@WORLD][:DIST])."""
    return split_world(spec, (STREAM,), "data") is not None


def parse_stream(spec: str) -> tuple[str, str]:
    """(world, distribution) of a stream spec world[@WORLD][:DIST] (no @WORLD: the default world);
    DIST defaults to finetuning. An unknown world or distribution is an error naming the choices."""
    parts = split_world(spec, (STREAM,), "data")
    if parts is None:
        raise UnbagError(f"{spec!r}: not a world stream; use world[@WORLD][:DIST]")
    _, style, dist = parts
    w = world(style)
    names = w.distributions()
    dist = dist or DEFAULT
    if dist not in names:
        prefix = spec.partition(":")[0]
        raise UnbagError(f"unknown world distribution in {spec!r}; use " + ", ".join(f"{prefix}:{d}" for d in names))
    return w.name, dist


def describe(scene: Scene, rng: np.random.Generator) -> str:
    """One more description of a scene, in another caption form (worlds/__init__.py: a stream's)."""
    return cap.describe(scene.objects, rng)[0]


def distribution(name: str | Distribution) -> Distribution:
    """The named distribution; a clear error for an unknown name."""
    if isinstance(name, Distribution):
        return name
    if name not in DISTRIBUTIONS:
        raise ValueError(f"unknown world distribution {name!r}; expected one of {sorted(DISTRIBUTIONS)}")
    return DISTRIBUTIONS[name]


@dataclass
class Sample:
    image: np.ndarray  # [px, px, 3] uint8
    caption: str
    segments: list[dict]
    scene: Scene
    form: cap.Form | None = None


@dataclass
class Twin:
    """A hard negative that differs from its sample only in binding, with what was swapped."""
    image: np.ndarray
    caption: str
    segments: list[dict]
    scene: Scene
    category: str  # color | size | material | count | relation


def training_scene(rng: np.random.Generator, held_out: bool = False) -> Scene:
    """A random scene: 30% one object (what SGI's object regions look like), 20% one or two groups
    of identical objects (counts), 50% two to four random objects."""
    while True:
        r = rng.random()
        if r < 0.3:
            objs = [random_attrs(rng, allow_held_out=held_out)]
        elif r < 0.5:
            shapes = rng.choice(SHAPES, size=2, replace=False)
            n1 = int(rng.integers(1, 5))
            n2 = int(rng.integers(0, 5 - n1))
            protos = [random_attrs(rng, allow_held_out=held_out, shape=str(s)) for s in shapes]
            objs = [protos[0]] * n1 + [protos[1]] * n2
        else:
            objs = [random_attrs(rng, allow_held_out=held_out) for _ in range(int(rng.integers(2, 5)))]
        placed = place(rng, objs)
        if placed is not None:
            return Scene(placed, int(rng.integers(2**31)))


def sibling_scene(rng: np.random.Generator, held_out: bool = False) -> Scene:
    """Two siblings (objects that share every attribute but their shape and one more, as a SWAP
    item's two objects do) and zero to two random objects, in random order: a scene that asks for
    an object's shape next to a same-looking neighbour, which few random scenes do."""
    while True:
        a_shape, b_shape = rng.choice(SHAPES, size=2, replace=False)
        attr = str(rng.choice(ATTRIBUTES))
        a = random_attrs(rng, allow_held_out=True, shape=str(a_shape))
        b = a.with_(shape=str(b_shape), **{attr: str(rng.choice([v for v in VALUES[attr] if v != getattr(a, attr)]))})
        objs = [a, b] + [random_attrs(rng, allow_held_out=held_out) for _ in range(int(rng.integers(0, 3)))]
        objs = [objs[i] for i in rng.permutation(len(objs))]
        if not held_out and any(o.held_out() for o in objs):
            continue
        placed = place(rng, objs)
        if placed is not None:
            return Scene(placed, int(rng.integers(2**31)))


def sample(seed: int, index: int, px: int = 64, dist: str | Distribution = DEFAULT) -> Sample:
    """Training sample `index` of the stream with this seed, from distribution `dist`."""
    d = distribution(dist)
    rng = np.random.default_rng([seed, 7, index])  # 7: keeps the stream apart from test items
    # its own generator, so the other samples stay the plain stream's
    if d.siblings and (sib := np.random.default_rng([seed, 13, index])).random() < d.siblings:
        rng, scene = sib, sibling_scene(sib, d.held_out)
    else:
        scene = training_scene(rng, d.held_out)
    form = cap.choose_form(scene.objects, rng, d.templates)
    if d.partial:  # its own generator: the scene and form draws stay those of the plain stream
        form = cap.partial_form(form, np.random.default_rng([seed, 11, index]), d.partial)
    text, segs = cap.apply(form, scene.objects)
    return Sample(render(scene, px), text, segs, scene, form)


def _swaps(objs: list, form: cap.Form):
    """Every binding swap of a scene under its caption form: (category, objects, form); objects of
    either world (flat `Obj`, 3D `Obj3D`)."""
    if form.kind == "relation":
        i, rel, j = form.order
        moved = list(objs)
        moved[i], moved[j] = replace(objs[i], x=objs[j].x, y=objs[j].y), replace(objs[j], x=objs[i].x, y=objs[i].y)
        yield "relation", moved, cap.Form("relation", form.template, (j, rel, i))  # "B rel A"
    if form.kind == "count":
        if len(form.order) == 2 and len(form.order[0]) != len(form.order[1]):
            (ga, gb) = form.order
            a, b = objs[ga[0]], objs[gb[0]]
            swapped = [a] * len(gb) + [b] * len(ga)
            groups = (tuple(range(len(gb))), tuple(range(len(gb), len(gb) + len(ga))))
            yield "count", swapped, cap.Form("count", form.template, groups)
        return
    for i in range(len(objs)):
        for j in range(i + 1, len(objs)):
            for attr in ATTRIBUTES:
                x, y = getattr(objs[i], attr), getattr(objs[j], attr)
                if x != y:
                    out = list(objs)
                    out[i], out[j] = replace(objs[i], **{attr: y}), replace(objs[j], **{attr: x})
                    yield attr, out, form


def twin(seed: int, index: int, px: int = 64, s: Sample | None = None,
         dist: str | Distribution = DEFAULT) -> Twin | None:
    """A binding-swap twin of sample `index` (its own random stream), or None when the scene has
    no swap that stays inside the distribution (held-out combinations, overlaps) and changes the
    caption."""
    d = distribution(dist)
    s = s or sample(seed, index, px, d)
    rng = np.random.default_rng([seed, 8, index])  # 8: twins never disturb the sample stream
    options = list(_swaps(s.scene.objects, s.form))
    for k in rng.permutation(len(options)):
        category, objs, form = options[k]
        if category == "count":
            placed = place(rng, objs)
            if placed is None:
                continue
            objs = placed
        elif category == "size" and not all(_fits(o, objs[:n]) for n, o in enumerate(objs)):
            continue
        if not d.held_out and any(o.held_out() for o in objs):
            continue
        text, segs = cap.apply(form, objs)
        if text == s.caption:
            continue
        scene = Scene(objs, s.scene.seed)
        return Twin(render(scene, px), text, segs, scene, category)
    return None
