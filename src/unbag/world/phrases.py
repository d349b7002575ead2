"""The phrase vocabulary of unbag's worlds and a phrase's one-word changes: what clip-dense's
phrase swaps (training/objectives/dense.py) and TFLocal-LI's calibration (heads/) replace words
with. Each world has its own attribute words; a change draws from the world the phrase speaks of."""
from __future__ import annotations

from .captions import NUMBERS, PLURAL, phrase
from .scene import COLORS, MATERIALS, SIZES, Obj
from .styles import WORLDS

VALUES = (SIZES, tuple(COLORS), MATERIALS)  # the flat world's attribute words: size, color, material
# each world's attribute words (sizes, colours, materials) and shape nouns, by world name
VOCABULARIES = {name: w.vocabulary() for name, w in WORLDS.items()}
SHAPE_WORDS = {name: tuple(w.part("shapes")) for name, w in WORLDS.items()}
NOUNS = {**{s: s for s in PLURAL}, **{p: s for s, p in PLURAL.items()}}  # shape noun -> shape


def attribute_changes(text: str, vocabulary: tuple = VALUES) -> list[list[str]]:
    """For each attribute word of a phrase (size, color or material of a world's `vocabulary`), in
    order, the phrase with that word replaced by each other value of its attribute."""
    words = text.split()
    out = []
    for i, w in enumerate(words):
        values = next((v for v in vocabulary if w in v), None)
        if values is not None:
            out.append([" ".join(words[:i] + [o] + words[i + 1:]) for o in values if o != w])
    return out


def number_changes(text: str) -> list[str]:
    """A counted phrase ("two small red spheres") with each other number of the world's grammar,
    the noun in that number ("one small red sphere", "three small red spheres", ...)."""
    words = text.split()
    if len(words) < 2:
        return []
    count = next((n for n, w in NUMBERS.items() if w == words[0]), None)
    noun = NOUNS.get(words[-1])
    if count is None or noun is None:
        return []
    return [" ".join([w] + words[1:-1] + [noun if n == 1 else PLURAL[noun]]) for n, w in NUMBERS.items() if n != count]


def alternatives(text: str, vocabulary: tuple = VALUES) -> list[str]:
    """Every one-word change of a phrase (each attribute word, then its number), flat: "a small red
    cube" gives "a large red cube", "a small blue cube", ... (only the words it names are changed)."""
    return [a for changes in attribute_changes(text, vocabulary) for a in changes] + number_changes(text)


def descriptions(world: str) -> list[str]:
    """Every description of one object a world's captions give ("a large gray rubber sphere"):
    each shape, size, colour and material of the world's vocabulary, in that order of loops."""
    sizes, colors, materials = VOCABULARIES[world]
    return [phrase(Obj(shape, color, size, material)) for shape in SHAPE_WORDS[world] for size in sizes
            for color in colors for material in materials]
