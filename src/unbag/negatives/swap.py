"""Word-swap negatives: within one caption (NegCLIP on free text) and across two (CLIC).

Follows CLIC's released code (arXiv 2505.24424): POS classes AUX, DET, INTJ, PART,
PUNCT, SYM, X, SCONJ and CCONJ are never swapped; a swap replaces every whole-word occurrence
(keeping quotes around it); with no usable class, two random tokens are swapped.
"""
from __future__ import annotations

import re

import numpy as np

from .pos import by_pos, tag

EXCLUDED = frozenset({"AUX", "DET", "INTJ", "PART", "PUNCT", "SYM", "X", "SCONJ", "CCONJ"})
_HOLD = "\x00"  # a placeholder no caption contains


def _pattern(word: str) -> re.Pattern:
    return re.compile(rf"(['\"]*)\b{re.escape(word.strip(chr(39) + '.'))}\b(['\"]*)")


def replace_word(text: str, word: str, by: str) -> str:
    """Replace every whole-word occurrence of `word` in `text` by `by`."""
    return _pattern(word).sub(lambda m: f"{m.group(1)}{by}{m.group(2)}", text)


def concat(sentences: list[str]) -> str:
    """Join sentences, each ending with exactly one period: ['a b', 'c.'] -> 'a b. c.'"""
    return " ".join(s.rstrip() if s.rstrip().endswith(".") else s.rstrip() + "." for s in sentences)


def _pick(rng: np.random.Generator, xs):
    return xs[int(rng.integers(len(xs)))]


def swap_within(text: str, rng: np.random.Generator) -> str | None:
    """Swap two words of the same POS class inside one caption (None when under two words)."""
    classes = {p: ws for p, ws in by_pos(text).items() if p not in EXCLUDED and len(ws) > 1}
    if classes:
        words = classes[_pick(rng, sorted(classes))]
    else:
        words = list(dict.fromkeys(w for w, p in tag(text) if p not in EXCLUDED))
        if len(words) < 2:
            return None
    i, j = rng.choice(len(words), size=2, replace=False)
    a, b = words[int(i)], words[int(j)]
    out = replace_word(replace_word(text, a, _HOLD), b, a).replace(_HOLD, b)
    return out if out != text else None


def swap_across(c1: str, c2: str, rng: np.random.Generator) -> str | None:
    """CLIC's cross-image negative: swap a same-class word between c1 and c2, join in random order
    (None when the two captions have no two different words to swap)."""
    p1, p2 = by_pos(c1), by_pos(c2)
    common = []
    for pos in sorted((set(p1) & set(p2)) - EXCLUDED):
        shared = set(p1[pos]) & set(p2[pos])
        w1 = [w for w in p1[pos] if w not in shared]
        w2 = [w for w in p2[pos] if w not in shared]
        if w1 and w2:
            common.append((w1, w2))
    if common:
        w1, w2 = common[int(rng.integers(len(common)))]
        a, b = _pick(rng, w1), _pick(rng, w2)
    else:  # fallback of the released code: a random token of each; here words only (a punctuation
        # token matched everywhere and made garbage) and two different words (else it swaps nothing)
        words = [list(dict.fromkeys(w for w, _ in tag(c) if re.search(r"\w", w))) for c in (c1, c2)]
        pairs = [(x, y) for x in words[0] for y in words[1] if x.lower() != y.lower()]
        if not pairs:
            return None
        a, b = _pick(rng, pairs)
    n1, n2 = replace_word(c1, a, b), replace_word(c2, b, a)
    return concat([n1, n2] if rng.random() < 0.5 else [n2, n1])
