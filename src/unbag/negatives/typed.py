"""DeGLA's typed hard negatives: reorder, swap nouns, swap adjectives, replace adjectives, replace nouns.

DeGLA's typed negatives (arXiv 2504.16801). Two rule-based generators behind one interface: `RuleGenerator` for
free text (spaCy POS tags and noun chunks, word lists for replacements) and `WorldGenerator`,
exact, for ctrl captions (it edits the scene description and re-renders the caption with the
grammar, never naming a held-out combination). `negatives/llm.py` adds an LLM-backed one.
Every negative passes `differs`: its sequence of meaning-bearing words differs from the caption's.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Protocol

import numpy as np

from ..world import captions as cap
from ..world.scene import ATTRIBUTES, COLORS, MATERIALS, SHAPES, SIZES, Obj
from .pos import tag
from .swap import replace_word

TYPES = ("reorder", "swap_nouns", "swap_adjectives", "replace_adjectives", "replace_nouns")
FUNCTION_WORDS = frozenset("a an the some this that these those its their his her".split())

# replacement vocabularies: a word is replaced within its group when it has one
ADJ_GROUPS = [list(COLORS) + ["black", "white", "gray", "pink", "orange", "golden", "silver"],
              ["small", "large", "big", "little", "tiny", "huge", "tall", "short", "long"],
              ["old", "young", "new"], ["wet", "dry"], ["hot", "cold", "warm"], ["open", "closed"],
              ["empty", "full"], ["clean", "dirty"], ["wooden", "metal", "plastic", "glass", "rubber", "stone"],
              ["bright", "dark"], ["happy", "sad", "angry"], ["standing", "sitting", "lying"]]
NOUN_GROUPS = [list(SHAPES) + ["ball", "box", "ring", "pyramid"],
               ["man", "woman", "boy", "girl", "child", "person", "player"],
               ["dog", "cat", "horse", "cow", "sheep", "bird", "elephant", "giraffe", "bear", "zebra"],
               ["car", "bus", "truck", "bicycle", "motorcycle", "train", "boat", "airplane"],
               ["table", "chair", "bed", "couch", "bench", "desk", "shelf"],
               ["pizza", "sandwich", "cake", "apple", "banana", "orange", "donut"],
               ["street", "beach", "field", "kitchen", "room", "park", "road", "river"],
               ["shirt", "hat", "jacket", "dress", "tie", "umbrella", "bag"]]


def meaning_words(text: str) -> list[str]:
    """Lower-case words without punctuation and function words (articles, determiners)."""
    return [w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in FUNCTION_WORDS]


def differs(caption: str, negative: str) -> bool:
    """True when the negative changes the caption's meaning-bearing words or their order."""
    return meaning_words(caption) != meaning_words(negative)


class NegativeGenerator(Protocol):
    """Makes up to k distinct negatives of a caption, each of one of `types`."""

    def generate(self, caption: str, k: int, rng: np.random.Generator,
                 types: tuple[str, ...] = TYPES) -> list[tuple[str, str]]:
        """[(type, negative), ...]; fewer than k when the caption allows fewer."""


def _fill(candidates: dict[str, list[str]], caption: str, k: int, rng: np.random.Generator,
          types: tuple[str, ...]) -> list[tuple[str, str]]:
    """Pick k distinct valid negatives, cycling over the types in random order."""
    pools = {t: [c for c in dict.fromkeys(candidates.get(t, [])) if differs(caption, c)] for t in types}
    out, seen = [], set()
    order = [str(t) for t in rng.permutation(list(types)) if pools[t]]
    while len(out) < k and order:
        for t in list(order):
            pool = [c for c in pools[t] if c not in seen]
            if not pool:
                order.remove(t)
                continue
            c = pool[int(rng.integers(len(pool)))]
            seen.add(c)
            out.append((t, c))
            if len(out) == k:
                break
    return out


def agree_articles(caption: str, negative: str) -> str:
    """'a'/'an' before each word the negative changed, agreeing with that word's first letter
    ('a space suit' -> 'an cyan space suit' becomes 'a cyan space suit'); other articles are kept."""
    old, new = caption.split(" "), negative.split(" ")
    if len(old) != len(new):
        return negative
    for i in range(len(new) - 1):
        if new[i].lower() in ("a", "an") and new[i + 1] != old[i + 1] and new[i + 1][:1].isalpha():
            want = "an" if new[i + 1][0].lower() in "aeiou" else "a"
            new[i] = want.capitalize() if new[i][0].isupper() else want
    return " ".join(new)


def _swap(text: str, a: str, b: str) -> str:
    hold = "\x00"
    return replace_word(replace_word(text, a, hold), b, a).replace(hold, b)


def _group_of(word: str, groups: list[list[str]]) -> list[str] | None:
    return next((g for g in groups if word.lower() in g), None)


class RuleGenerator:
    """Typed negatives for free text from spaCy tags, noun chunks and word lists."""

    def candidates(self, caption: str) -> dict[str, list[str]]:
        tagged = tag(caption)
        nouns = list(dict.fromkeys(w for w, p in tagged if p in ("NOUN", "PROPN")))
        adjs = list(dict.fromkeys(w for w, p in tagged if p == "ADJ"))
        out: dict[str, list[str]] = {t: [] for t in TYPES}
        out["swap_nouns"] = [_swap(caption, a, b) for i, a in enumerate(nouns) for b in nouns[i + 1:]]
        out["swap_adjectives"] = [_swap(caption, a, b) for i, a in enumerate(adjs) for b in adjs[i + 1:]]
        for kind, words, groups, fallback in (("replace_adjectives", adjs, ADJ_GROUPS, ADJ_GROUPS[0]),
                                              ("replace_nouns", nouns, NOUN_GROUPS, NOUN_GROUPS[1])):
            for w in words:
                for r in (_group_of(w, groups) or fallback):
                    if r != w.lower():
                        out[kind].append(replace_word(caption, w, r))
        out["reorder"] = self._reorder(caption)
        return {k: [agree_articles(caption, c) for c in v] for k, v in out.items()}

    def _reorder(self, caption: str) -> list[str]:
        """Exchange two noun chunks (with their modifiers): 'a dog chasing a cat' -> 'a cat chasing a dog'."""
        from ..text import spacy_model

        nlp = spacy_model()
        chunks = [c for c in nlp(caption).noun_chunks] if nlp is not None else []
        out = []
        for i, a in enumerate(chunks):
            for b in chunks[i + 1:]:
                if a.text.lower() != b.text.lower():
                    out.append(caption[:a.start_char] + b.text + caption[a.end_char:b.start_char]
                               + a.text + caption[b.end_char:])
        return out

    def generate(self, caption: str, k: int, rng: np.random.Generator,
                 types: tuple[str, ...] = TYPES) -> list[tuple[str, str]]:
        return _fill(self.candidates(caption), caption, k, rng, types)


class WorldGenerator:
    """Exact typed negatives for a world scene described by a caption form, in a world's vocabulary
    (the flat world's by default; `for_world(w)`: any declared world's)."""

    def __init__(self, values: dict | None = None, shapes: tuple[str, ...] = SHAPES,
                 held_out: Callable[[object], list] = lambda o: o.held_out()):
        self.values = values or {"size": SIZES, "color": tuple(COLORS), "material": MATERIALS}
        self.shapes, self.held_out = shapes, held_out

    @classmethod
    def for_world(cls, world) -> "WorldGenerator":
        """The generator of a world's vocabulary (a world/worlds/ declaration)."""
        sizes, colors, materials = world.vocabulary()
        return cls({"size": sizes, "color": colors, "material": materials}, tuple(world.part("shapes")),
                   world.part("held_out"))

    def candidates(self, objs: list[Obj], form: cap.Form) -> dict[str, list[str]]:
        units = [list(g) for g in form.order] if form.kind == "count" else \
            ([[form.order[0]], [form.order[2]]] if form.kind == "relation" else [[i] for i in form.order])
        out: dict[str, list[str]] = {t: [] for t in TYPES}

        def emit(kind: str, new: list[Obj], f: cap.Form = form) -> None:
            if not any(self.held_out(o) for o in new):  # negatives never name a held-out pair either
                out[kind].append(cap.apply(f, new)[0])

        def edit(unit, **kw):
            new = list(objs)
            for i in unit:
                new[i] = replace(objs[i], **kw)
            return new
        for a in range(len(units)):
            for b in range(a + 1, len(units)):
                oa, ob = objs[units[a][0]], objs[units[b][0]]
                if oa.shape != ob.shape:
                    emit("swap_nouns", _edit2(objs, units[a], units[b], "shape"))
                for attr in ATTRIBUTES:
                    if getattr(oa, attr) != getattr(ob, attr):
                        emit("swap_adjectives", _edit2(objs, units[a], units[b], attr))
        values = self.values
        for u in units:
            o = objs[u[0]]
            for attr, vals in values.items():
                for v in vals:
                    if v != getattr(o, attr):
                        emit("replace_adjectives", edit(u, **{attr: v}))
            for s in self.shapes:
                if s != o.shape:
                    emit("replace_nouns", edit(u, shape=s))
        if form.kind == "relation":
            i, rel, j = form.order
            emit("reorder", objs, cap.Form("relation", form.template, (j, rel, i)))
        elif form.kind == "count" and len(units) == 2 and len(units[0]) != len(units[1]):
            a, b = objs[units[0][0]], objs[units[1][0]]
            n = len(units[1])
            emit("reorder", [a] * n + [b] * len(units[0]),
                 cap.Form("count", form.template, (tuple(range(n)), tuple(range(n, len(objs))))))
        return out

    def generate_for(self, objs: list[Obj], form: cap.Form, k: int, rng: np.random.Generator,
                     types: tuple[str, ...] = TYPES) -> list[tuple[str, str]]:
        caption = cap.apply(form, objs)[0]
        return _fill(self.candidates(objs, form), caption, k, rng, types)


def _edit2(objs: list[Obj], ua: list[int], ub: list[int], attr: str) -> list[Obj]:
    """Exchange one attribute between two units (objects or groups of identical objects)."""
    va, vb = getattr(objs[ua[0]], attr), getattr(objs[ub[0]], attr)
    new = list(objs)
    for i in ua:
        new[i] = replace(objs[i], **{attr: vb})
    for i in ub:
        new[i] = replace(objs[i], **{attr: va})
    return new
