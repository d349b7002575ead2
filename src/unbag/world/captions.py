"""Caption grammar of the controlled world; every caption comes with its segments.

A segment is one object phrase ("a large red metal cube"), one object-group phrase ("two small
blue rubber spheres") or one relation phrase ("a red ... cube to the left of a blue ... sphere"),
with the indices of the scene objects it refers to. SGI and the alignment heads use them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .scene import Obj

NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four"}
PLURAL = {"cube": "cubes", "sphere": "spheres", "cylinder": "cylinders", "cone": "cones",
          "star": "stars"}
RELATIONS = ("to the left of", "to the right of", "above", "below")
TEMPLATES = ("{}", "a picture of {}", "there is {}", "an image showing {}", "{} on a grey floor",
             "a scene with {}")
# further templates of the pretraining distribution (web captions are more varied)
WEB_TEMPLATES = ("a photo of {}", "a rendering of {}", "{} in a grey room", "look at {}",
                 "a close-up of {}", "we see {}")
NAMED = ("size", "color", "material")  # the attributes a full caption names, in this order


def article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def phrase(o: Obj, count: int | None = None, named: tuple[str, ...] = NAMED) -> str:
    """Noun phrase for one object, or for `count` identical objects when count is given, naming
    the attributes in `named` (all by default)."""
    words = " ".join(str(getattr(o, a)) for a in NAMED if a in named)
    if not words:
        return (f"{article(o.shape)} {o.shape}" if count is None
                else f"{NUMBERS[count]} {o.shape if count == 1 else PLURAL[o.shape]}")
    if count is None:
        return f"{article(words)} {words} {o.shape}"
    noun = o.shape if count == 1 else PLURAL[o.shape]
    return f"{NUMBERS[count]} {words} {noun}"


def join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def segment(text: str, kind: str, objects: list[int]) -> dict:
    return {"text": text, "kind": kind, "objects": list(objects)}


def list_caption(objs: list[Obj], order: list[int], template: str,
                 named: tuple[str, ...] = NAMED) -> tuple[str, list[dict]]:
    """'a large red metal cube and a small blue rubber sphere' in the given object order."""
    segs = [segment(phrase(objs[i], named=named), "object", [i]) for i in order]
    return template.format(join([s["text"] for s in segs])), segs


def count_caption(objs: list[Obj], groups: list[list[int]], template: str,
                  named: tuple[str, ...] = NAMED) -> tuple[str, list[dict]]:
    """'two small red rubber spheres and one large blue metal cube' for groups of identical objects."""
    segs = [segment(phrase(objs[g[0]], len(g), named), "group" if len(g) > 1 else "object", g)
            for g in groups]
    return template.format(join([s["text"] for s in segs])), segs


def relation_caption(objs: list[Obj], subj: int, rel: str, obj: int,
                     named: tuple[str, ...] = NAMED) -> tuple[str, list[dict]]:
    """'a red ... cube to the left of a blue ... sphere' with its two object phrases."""
    a, b = phrase(objs[subj], named=named), phrase(objs[obj], named=named)
    text = f"{a} {rel} {b}"
    return text, [segment(a, "object", [subj]), segment(b, "object", [obj]),
                  segment(text, "relation", [subj, obj])]


def relation_holds(a: Obj, rel: str, b: Obj, margin: float = 0.2) -> bool:
    """Whether `a rel b` is clearly true: offset along the axis >= margin and dominating the other."""
    dx, dy = b.x - a.x, b.y - a.y
    if rel == "to the left of":
        return dx >= margin and abs(dx) > 2 * abs(dy)
    if rel == "to the right of":
        return -dx >= margin and abs(dx) > 2 * abs(dy)
    if rel == "above":
        return dy >= margin and abs(dy) > 2 * abs(dx)
    if rel == "below":
        return -dy >= margin and abs(dy) > 2 * abs(dx)
    raise ValueError(f"unknown relation {rel!r}")


def groups_of(objs: list[Obj]) -> list[list[int]]:
    """Indices of identical objects (same shape, color, size, material), in first-seen order."""
    keys: dict[tuple, list[int]] = {}
    for i, o in enumerate(objs):
        keys.setdefault((o.shape, o.color, o.size, o.material), []).append(i)
    return list(keys.values())


@dataclass(frozen=True)
class Form:
    """How a caption describes a scene, reusable on a twin scene with the same object indices:
    kind 'list' (order = object indices), 'count' (order = groups of indices) or 'relation'
    (order = (subject, relation, object))."""
    kind: str
    template: str
    order: tuple
    named: tuple[str, ...] = NAMED  # the attributes its phrases name


def choose_form(objs: list[Obj], rng: np.random.Generator, templates: tuple[str, ...] = TEMPLATES,
                relations: tuple[str, ...] = RELATIONS, holds=relation_holds) -> Form:
    """A random caption form for a training scene: relation form when it clearly holds (`holds(a,
    rel, b)`, over `relations`), count form when identical objects repeat, list form otherwise."""
    template = str(rng.choice(templates))
    groups = groups_of(objs)
    if len(objs) == 2 and len(groups) == 2 and rng.random() < 0.5:
        for rel in rng.permutation(relations):
            i, j = (0, 1) if rng.random() < 0.5 else (1, 0)
            if holds(objs[i], str(rel), objs[j]):
                return Form("relation", template, (i, str(rel), j))
    if len(groups) < len(objs) or rng.random() < 0.2:
        return Form("count", template, tuple(tuple(groups[k]) for k in rng.permutation(len(groups))))
    return Form("list", template, tuple(int(k) for k in rng.permutation(len(objs))))


def partial_form(form: Form, rng: np.random.Generator, p: float) -> Form:
    """With probability p, the same form naming only a random proper subset of the attributes
    (web captions rarely name every attribute: "a small cube", "two red spheres")."""
    if rng.random() >= p:
        return form
    subsets = [tuple(a for k, a in enumerate(NAMED) if m >> k & 1) for m in range(2 ** len(NAMED) - 1)]
    return replace(form, named=subsets[int(rng.integers(len(subsets)))])


def apply(form: Form, objs: list[Obj]) -> tuple[str, list[dict]]:
    """The caption and segments of a form on a scene."""
    if form.kind == "relation":
        i, rel, j = form.order
        return relation_caption(objs, i, rel, j, form.named)
    if form.kind == "count":
        return count_caption(objs, [list(g) for g in form.order], form.template, form.named)
    return list_caption(objs, list(form.order), form.template, form.named)


def describe(objs: list[Obj], rng: np.random.Generator) -> tuple[str, list[dict]]:
    """A random caption of a training scene, with its segments."""
    return apply(choose_form(objs, rng), objs)
