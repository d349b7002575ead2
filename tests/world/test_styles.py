"""Which world a name means: explicit names always theirs, unqualified ones the default world."""
import dataclasses
import json

import pytest

from unbag import benchmarks
from unbag.errors import UnbagError
from unbag.heads.extract import SWAPS
from unbag.training import select
from unbag.world import styles
from unbag.world.stream import parse_stream

EXPLICIT = [("world@flat:pretraining", "flat"), ("world@3d:pretraining", "3d")]


@pytest.mark.parametrize("default", styles.STYLES)
def test_explicit_names_keep_their_world_and_plain_ones_follow_the_default(monkeypatch, default):
    monkeypatch.setattr(styles, "DEFAULT", default)
    for spec, world in EXPLICIT + [("world:pretraining", default)]:
        assert parse_stream(spec) == (world, "pretraining")
    for spec, world in [("ctrl-id@flat", "flat"), ("ctrl-id@3d", "3d"), ("ctrl-id", default)]:
        assert select.parse(spec) == (world, select.DEFAULT_PER_CATEGORY)
    assert [styles.resolve(styles.split_world(s, (SWAPS,), "data")[1]) for s in ("swaps", "swaps@flat", "swaps@3d")] == \
        [default, "flat", "3d"]
    for name in ("ctrl", "ctrl-retrieval"):
        assert benchmarks.stamp(name) == benchmarks.stamp(f"{name}@{default}")
        assert benchmarks.stamp(f"{name}@flat")["style"] == "flat" and benchmarks.stamp(f"{name}@3d")["style"] == "3d"


@pytest.mark.parametrize("default", styles.STYLES)
def test_the_generated_benchmarks_are_drawn_in_the_default_world(monkeypatch, default):
    monkeypatch.setattr(styles, "DEFAULT", default)
    b = benchmarks.load("ctrl", per_category=1)
    r = benchmarks.load("ctrl-retrieval:3")
    assert b.info["style"] == default and r.info["style"] == default and len(r.images) == 3
    # what `unbag run` compares a recorded result with is what the benchmark records
    for spec, bench in (("ctrl", b), ("ctrl-retrieval:3", r)):
        assert all(bench.info[k] == v for k, v in benchmarks.stamp(spec, per_category=1).items())
    assert benchmarks.stamp("ctrl", 1)["per_category"] == 1 and benchmarks.stamp("ctrl")["per_category"] == 400
    one = benchmarks.load_item("ctrl", "ood-color-0000")
    assert one.info["style"] == default and one.items[0].captions == b.only("ood-color-0000").items[0].captions


def test_a_result_made_at_another_size_is_made_again(monkeypatch):
    # the stamp `unbag run` compares with a recorded result holds the size the world is drawn at
    before = benchmarks.stamp("ctrl@3d")
    monkeypatch.setitem(styles.WORLDS, "3d", dataclasses.replace(styles.WORLDS["3d"], px=48))
    after = benchmarks.stamp("ctrl@3d")
    assert before["size"] == styles.SIZES["3d"] and after["size"] == 48
    b = benchmarks.load("ctrl@3d", per_category=1)
    r = benchmarks.load("ctrl-retrieval@3d:2")
    assert b.image_size == 48 and b.info["size"] == 48 and r.info["size"] == 48
    assert {len(im) for it in b.items for im in it.images} == {48} and benchmarks.stamp("ctrl@flat")["size"] == 64


def test_a_world_named_in_the_spec_beats_the_default(monkeypatch):
    monkeypatch.setattr(styles, "DEFAULT", "flat")
    b = benchmarks.load("ctrl@3d", per_category=1)
    assert b.info["style"] == "3d" and b.sgi and b.spec == "ctrl@3d"
    assert benchmarks.load("ctrl-retrieval@3d:2").info["style"] == "3d"
    assert benchmarks.load("ctrl@3d", per_category=1, style="3d").info["style"] == "3d"


@pytest.mark.parametrize("spec, style, match", [
    ("ctrl@2d", None, "unknown world '2d'; one of 3d, flat"),
    ("ctrl@", None, "unknown world ''; one of 3d, flat"),
    ("sugarcrepe@3d:x", None, "@WORLD is for the generated benchmarks"),
    ("ctrl@flat", "3d", "two worlds named"),
    ("ctrl:some/dir", "3d", "has the size and world it was built with"),
])
def test_a_bad_world_is_a_clear_error(spec, style, match):
    with pytest.raises(UnbagError, match=match):
        benchmarks.load(spec, per_category=1 if style else None, style=style)


def test_negatives_are_exported_from_either_worlds_stream(tmp_path):
    from unbag.negatives.export import export

    for spec, world in [("world@flat", "flat"), ("world@3d", "3d")]:
        out = export(spec, tmp_path / f"{world}.json", k=2, n=3, progress=False)
        entries = json.loads(out.read_text())
        assert [e["world"]["style"] for e in entries] == [world] * 3
        assert all(e["world"]["distribution"] == "finetuning" and len(e["enhanced"]) == 2 for e in entries)


@pytest.mark.parametrize("old, new", sorted(styles.RENAMED.items()))
def test_an_old_spelling_is_refused_naming_the_new_one(old, new):
    with pytest.raises(UnbagError, match=f"now spelled '{new}:2'"):
        styles.split_world(f"{old}:2", (new.partition("@")[0],), "data")


def test_each_world_is_declared_once_with_every_part_it_names():
    """Every declared world's parts resolve, and its generated benchmark, stream and boxes work
    through the declaration alone."""
    import numpy as np

    for name, w in styles.WORLDS.items():
        assert w.name == name and w.px >= styles.MIN_PX
        assert w.render_version() >= 1 and w.categories() and w.splits() == ("id", "ood")
        assert w.distributions() == tuple(w.part("stream").DISTRIBUTIONS)
        item, images, fields = w.swap_item(0, "id", "color", 0, 32)
        assert len(images) == 2 and all(im.shape == (32, 32, 3) and im.dtype == np.uint8 for im in images)
        assert {"segments", "objects", "held_out"} <= set(fields)
        s = w.part("stream").sample(0, 0, 32, w.distributions()[0])
        boxes = w.object_boxes(s.scene, 32)
        assert len(boxes) == len(s.scene.objects) and any(b is not None for b in boxes)
        assert callable(w.part("build")) and callable(w.part("held_out")) and len(w.part("shapes")) >= 3
