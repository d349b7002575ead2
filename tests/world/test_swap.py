import re

import pytest

from unbag.world import captions as cap
from unbag.world.scene import ATTRIBUTES, HELD_OUT
from unbag.world.swap import CATEGORIES, SPLITS, build_item

ITEMS = [build_item(11, s, c, i) for s in SPLITS for c in CATEGORIES for i in range(12)]


def _key(o, *drop):
    return tuple(getattr(o, a) for a in ("shape", "color", "size", "material", "x", "y") if a not in drop)


@pytest.mark.parametrize("item", [it for it in ITEMS if it.category in ATTRIBUTES], ids=lambda it: it.id)
def test_attribute_items_differ_exactly_by_the_swapped_binding(item):
    cat = item.category
    (a0, b0), (a1, b1) = item.scenes[0].objects, item.scenes[1].objects
    assert _key(a0, cat) == _key(a1, cat) and _key(b0, cat) == _key(b1, cat)  # all else equal
    assert getattr(a0, cat) != getattr(b0, cat)
    assert (getattr(a1, cat), getattr(b1, cat)) == (getattr(b0, cat), getattr(a0, cat))
    assert a0.shape != b0.shape
    assert _key(a0, cat, "shape", "x", "y") == _key(b0, cat, "shape", "x", "y")  # A, B share the rest
    assert item.scenes[0].seed == item.scenes[1].seed  # same background
    # captions: same words, the swapped values exchanged between the two object phrases
    c0, c1 = item.captions
    assert c0 != c1 and sorted(c0.split()) == sorted(c1.split())
    x, y = getattr(a0, cat), getattr(b0, cat)
    swapped = re.sub(rf"\b({x}|{y})\b", lambda m: y if m.group(1) == x else x, c0)
    assert swapped == c1


@pytest.mark.parametrize("item", [it for it in ITEMS if it.category == "count"], ids=lambda it: it.id)
def test_count_items_swap_the_numbers(item):
    def counts(scene):
        out = {}
        for o in scene.objects:
            out[_key(o, "x", "y")] = out.get(_key(o, "x", "y"), 0) + 1
        return out
    n0, n1 = counts(item.scenes[0]), counts(item.scenes[1])
    assert set(n0) == set(n1) and len(n0) == 2
    (ka, kb) = n0
    assert (n1[ka], n1[kb]) == (n0[kb], n0[ka]) and n0[ka] != n0[kb]
    for scene, text, segs in zip(item.scenes, item.captions, item.segments):
        for s in segs:
            assert s["text"] in text
            n = len(s["objects"])
            assert s["text"].startswith(cap.NUMBERS[n] + " ")


@pytest.mark.parametrize("item", [it for it in ITEMS if it.category == "relation"], ids=lambda it: it.id)
def test_relation_items_swap_positions_and_roles(item):
    (a0, b0), (a1, b1) = item.scenes[0].objects, item.scenes[1].objects
    assert _key(a0, "x", "y") == _key(a1, "x", "y") and (a1.x, a1.y) == (b0.x, b0.y)
    c0, c1 = item.captions
    rel = next(r for r in cap.RELATIONS if f" {r} " in c0)
    pa, pb = cap.phrase(a0), cap.phrase(b0)
    assert c0 == f"{pa} {rel} {pb}" and c1 == f"{pb} {rel} {pa}"
    assert cap.relation_holds(a0, rel, b0) and cap.relation_holds(b1, rel, a1)
    assert not cap.relation_holds(b0, rel, a0)


@pytest.mark.parametrize("item", ITEMS, ids=lambda it: it.id)
def test_splits_respect_held_out_combinations(item):
    if item.split == "id":
        assert item.held_out() == []
    else:
        assert item.held_out()
        if item.category in HELD_OUT:  # an attribute item uses a held-out pair of its own attribute
            pairs = HELD_OUT[item.category]
            assert any((getattr(o, item.category), o.shape) in pairs
                       for s in item.scenes for o in s.objects)


def test_segments_cover_the_caption_objects():
    for it in ITEMS:
        for scene, segs in zip(it.scenes, it.segments):
            covered = sorted({i for s in segs if s["kind"] != "relation" for i in s["objects"]})
            assert covered == list(range(len(scene.objects)))


def test_items_are_deterministic_and_independent_of_build_size():
    assert build_item(5, "ood", "color", 3).captions == build_item(5, "ood", "color", 3).captions
    assert build_item(5, "ood", "color", 3).captions != build_item(6, "ood", "color", 3).captions
