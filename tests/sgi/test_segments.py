import pytest

from unbag.sgi import segments as seg
from unbag.text import spacy_model
from unbag.world.swap import CATEGORIES, build_item


def test_grammar_segments_of_ctrl_captions():
    it = build_item(0, "id", "relation", 0)
    ss = seg.from_grammar(it.segments[0])
    assert [s.kind for s in ss] == ["object", "object", "relation"]
    assert ss[2].text == it.captions[0]
    it = build_item(0, "id", "count", 1)
    kinds = {s.kind for s in seg.from_grammar(it.segments[0])}
    assert "group" in kinds


needs_spacy = pytest.mark.skipif(spacy_model() is None, reason="no spaCy English model installed")


@needs_spacy
@pytest.mark.parametrize("cat", CATEGORIES)
def test_spacy_recovers_the_grammar_segments(cat):
    for i in range(5):
        it = build_item(1, "ood", cat, i)
        for caption, truth in zip(it.captions, it.segments):
            got = {(s.text, s.kind) for s in seg.parse_spacy(caption, spacy_model())}
            want = {(s["text"], s["kind"]) for s in truth}
            assert want <= got, (caption, got)


@needs_spacy
@pytest.mark.parametrize("text, expected", [
    ("A man riding a brown horse next to a white fence.",
     {("A man", "object"), ("a brown horse", "object"), ("a white fence", "object"),
      ("A man riding a brown horse", "relation")}),
    ("The dog is chasing two cats.", {("The dog", "object"), ("two cats", "group"),
                                      ("The dog is chasing two cats", "relation")}),
    ("a red car and a blue bus", {("a red car", "object"), ("a blue bus", "object")}),
    ("a photo of a cat on the table", {("a cat", "object"), ("the table", "object"),
                                       ("a cat on the table", "relation")}),
])
def test_spacy_free_text(text, expected):
    got = {(s.text, s.kind) for s in seg.parse_spacy(text, spacy_model())}
    assert expected <= got
    assert not any(s[0].startswith("a photo") for s in got)
    if "and" in text:
        assert not any(k == "relation" for _, k in got)  # a list relates nothing


@needs_spacy
def test_spacy_keeps_a_noun_phrase_whose_head_it_mistags():
    """spaCy's small model reads "sphere" here as an adverb, so its noun chunks drop the subject."""
    text = "a small cyan rubber sphere to the left of a small yellow rubber cube"
    got = [(s.text, s.kind, s.parts, s.predicate) for s in seg.parse_spacy(text, spacy_model())]
    assert got == [("a small cyan rubber sphere", "object", None, None),
                   ("a small yellow rubber cube", "object", None, None), (text, "relation", (0, 1), "left")]


def test_rules_fallback():
    ss = seg.parse_rules("There is a large red cube to the left of two small blue spheres.")
    assert [(s.text, s.kind) for s in ss] == [("a large red cube", "object"), ("two small blue spheres", "group"),
                                              ("a large red cube to the left of two small blue spheres", "relation")]
    assert [s.text for s in seg.parse_rules("a picture of a cat, a dog and a bird")] == ["a cat", "a dog", "a bird"]


def test_fallback_is_used_with_a_warning_when_spacy_is_missing(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_spacy(name, *a, **kw):
        if name == "spacy":
            raise ImportError(name)
        return real(name, *a, **kw)

    spacy_model.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_spacy)
    try:
        with pytest.warns(UserWarning, match="rule-based"):
            assert [s.text for s in seg.parse("a red cube and a blue ball")] == ["a red cube", "a blue ball"]
    finally:
        monkeypatch.setattr(builtins, "__import__", real)
        spacy_model.cache_clear()


def test_relation_parts_and_predicates():
    it = build_item(0, "id", "relation", 3)
    rel = seg.from_grammar(it.segments[0])[2]
    assert rel.parts == (0, 1) and rel.predicate in {"left", "right", "above", "below"}
    assert seg.predicate_of("to the left of") == "left" and seg.predicate_of("under") == "below"
    assert seg.predicate_of("riding") is None
    r = seg.parse_rules("a red cube to the right of two blue spheres")[2]
    assert r.parts == (0, 1) and r.predicate == "right"


@needs_spacy
def test_spacy_relation_predicate_uses_the_linking_words():
    ss = seg.parse_spacy("a cat on top of a red table next to two dogs", spacy_model())
    rels = {s.text: s for s in ss if s.kind == "relation"}
    assert rels["a cat on top of a red table"].predicate == "above"
    assert rels["a cat on top of a red table"].parts == (0, 1)


@needs_spacy
@pytest.mark.parametrize("text, predicate", [
    ("a cat under a wooden table", "below"), ("a dog in front of a red car", "front"),
    ("a man standing behind a tree", "behind"), ("a cup on a table", "above"),
    ("a lamp above the bed", "above"), ("a bird to the right of a statue", "right"),
    ("a red cube on the left of a blue sphere", "left"), ("a box on top of a shelf", "above"),
    ("a cat beneath a chair", "below"), ("a man riding a horse", None)])
def test_spacy_parses_spatial_predicates_of_free_text(text, predicate):
    rels = [s for s in seg.parse_spacy(text, spacy_model()) if s.kind == "relation"]
    assert len(rels) == 1 and rels[0].parts == (0, 1) and rels[0].predicate == predicate, rels


def test_descriptions_of_counted_phrases():
    assert seg.description("three small red rubber cubes") == "a small red rubber cube"
    assert seg.description("two large orange boxes") == "a large orange box"
    assert seg.description("one tiny berry") == "a tiny berry"
    assert seg.description("4 elephants") == "an elephant"
    assert [seg.singular(w) for w in ("glasses", "cherries", "spheres", "grass")] == [
        "glass", "cherry", "sphere", "grass"]
