import json
import re

import numpy as np
import pytest

from unbag.negatives.export import export
from unbag.negatives.typed import TYPES, RuleGenerator, WorldGenerator, differs, meaning_words
from unbag.world import captions as cap, stream
from unbag.world.scene import SHAPES, Obj


def test_differs_ignores_articles_but_not_words_or_order():
    assert not differs("a dog on a bed", "the dog on the bed")
    assert differs("a dog on a bed", "a bed on a dog")
    assert differs("a red cube", "a blue cube")
    assert meaning_words("A dog, on the bed!") == ["dog", "on", "bed"]


@pytest.mark.parametrize("text", [
    "a man riding a horse",                      # no adjective
    "a red bus and a red car on a red road",     # repeated words
    "A small dog, a big cat; and two birds!",    # punctuation
    "three people standing on a wet beach at sunset",
])
def test_rule_negatives_always_differ(text):
    got = RuleGenerator().generate(text, 4, np.random.default_rng(0))
    assert got and len({n for _, n in got}) == len(got)
    for kind, neg in got:
        assert kind in TYPES and neg != text and differs(text, neg)


def test_rule_types_do_what_they_say():
    g = RuleGenerator()
    c = g.candidates("a brown dog chasing a white cat")
    assert "a white dog chasing a brown cat" in c["swap_adjectives"]
    assert c["swap_nouns"] == ["a brown cat chasing a white dog"]  # the nouns trade places, adjectives stay
    assert "a white cat chasing a brown dog" in c["reorder"]
    assert all(n.split()[1] != "brown" or n.split()[5] != "white" for n in c["replace_adjectives"])
    assert c["swap_adjectives"] and c["replace_nouns"]
    assert not g.candidates("a man riding a horse")["swap_adjectives"]


def test_a_sentence_with_nothing_to_change_gets_none():
    assert RuleGenerator().generate("hello there", 4, np.random.default_rng(0)) == []


def test_world_negatives_are_exact_and_never_held_out():
    assert _names_held_out("a small red metal cube") and _names_held_out("two large blue rubber stars")
    assert not _names_held_out("a small red metal sphere")
    w = WorldGenerator()
    for k in range(60):
        s = stream.sample(3, k)
        got = w.generate_for(s.scene.objects, s.form, 4, np.random.default_rng(k))
        assert len(got) == 4
        for kind, neg in got:
            assert differs(s.caption, neg)
        cands = w.candidates(s.scene.objects, s.form)
        if s.form.kind == "relation":
            i, rel, j = s.form.order
            assert cap.relation_caption(s.scene.objects, j, rel, i)[0] in cands["reorder"]
        for kind in TYPES:
            for text in cands[kind]:
                assert not _names_held_out(text), (kind, text)


def _names_held_out(text: str) -> bool:
    """Whether a caption names a held-out pair: phrases are 'size color material shape'."""
    for size, color, material, shape in re.findall(r"(small|large) (\w+) (rubber|metal) (\w+?)s?\b", text):
        o = Obj(shape, color, size, material, 0.5, 0.5) if shape in SHAPES else None
        if o is not None and o.held_out():
            return True
    return False


def test_export_writes_degla_layout(tmp_path):
    out = export("world", tmp_path / "neg.json", k=4, n=6, progress=False)
    entries = json.loads(out.read_text())
    assert len(entries) == 6
    for e in entries:
        assert set(e) >= {"image_id", "original", "enhanced"} and len(e["enhanced"]) == 4
        assert all(differs(e["original"], n) for n in e["enhanced"])
    meta = json.loads((tmp_path / "neg.meta.json").read_text())
    assert meta["n"] == 6 and meta["k"] == 4 and meta["generator"] == "world grammar" and "unbag" in meta["versions"]
