"""The 3D world's SWAP items, format version 2 and its build; the flat world left as it was."""
import hashlib
import json

import numpy as np
import pytest
from PIL import Image

from unbag import benchmarks
from unbag.errors import UnbagError
from unbag.world import swap3d
from unbag.world.io import build
from unbag.world.scene3d import min_visible
from unbag.world.styles import size

# sha256 over (path, bytes) of `build(seed=0, per_category=2)` made by the code before the 3D world
# existed (commit 9472160): the flat style must keep writing exactly these files
FLAT_SEED0_DIGEST = "05fd938208ded85b163a21bbec09786f0e516856d32d79fc71f14358e1d0e33c"


def _digest(root):
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != ".unbag-output":
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_flat_build_is_byte_identical_to_before_the_3d_world(tmp_path):
    build(tmp_path / "flat", seed=0, per_category=2, progress=False, style="flat")
    assert _digest(tmp_path / "flat") == FLAT_SEED0_DIGEST
    meta = json.loads((tmp_path / "flat" / "meta.json").read_text())
    assert meta["version"] == 1 and "style" not in meta


@pytest.fixture(scope="module")
def built3d(tmp_path_factory):
    root = tmp_path_factory.mktemp("w3d") / "b"
    build(root, seed=3, per_category=2, progress=False, style="3d", procs=2)
    return root


@pytest.mark.slow
def test_3d_build_is_deterministic_for_any_number_of_processes(built3d, tmp_path):
    build(tmp_path / "again", seed=3, per_category=2, progress=False, style="3d", procs=1)
    assert _digest(tmp_path / "again") == _digest(built3d)
    # another seed, other scenes (checked on the items alone: a second build would only render them)
    assert swap3d.build_item(4, "id", "color", 0, 64).scenes != swap3d.build_item(3, "id", "color", 0, 64).scenes


def test_format_2_records_match_the_masks_and_the_scenes(built3d):
    meta = json.loads((built3d / "meta.json").read_text())
    assert meta["version"] == 2 and meta["style"] == "3d" and meta["render"] == 3
    assert "red cube" in meta["held_out"]["color"] and "gray cylinder" in meta["held_out"]["color"]
    recs = [json.loads(ln) for ln in (built3d / "items.jsonl").read_text().splitlines()]
    assert len(recs) == 2 * 5 * 2
    for rec in recs:
        for k in range(2):
            inst = np.asarray(Image.open(built3d / rec["masks"][k])).astype(int)
            objs = rec["objects"][k]
            assert inst.max() <= len(objs)
            for j, o in enumerate(objs, 1):
                ys, xs = np.nonzero(inst == j)
                assert o["visible_px"] == len(xs) >= min_visible(size("3d"))  # built at the 3D world's size
                assert o["box"] == [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
                assert o["xyz"][2] == pytest.approx({"large": 0.7, "small": 0.35}[o["size"]] /
                                                    (2 ** 0.5 if o["shape"] == "cube" else 1), abs=1e-5)
            scene = swap3d.scene_from_record(objs, rec["scenes"][k])
            # the record renders back to the stored mask
            from unbag.world.render3d import instances
            assert np.array_equal(instances(scene, size("3d")), inst)
        assert rec["scenes"][0] == rec["scenes"][1]  # both images: one camera, the same lights


def _items(category, split, n=4):
    return [swap3d.build_item(11, split, category, i) for i in range(n)]


@pytest.mark.parametrize("category", ["color", "size", "material"])
def test_attribute_items_swap_one_attribute_and_keep_everything_else(category):
    for split in ("id", "ood"):
        for it in _items(category, split):
            a, b = it.scenes
            assert a.camera == b.camera and a.lights == b.lights
            named = sorted({i for seg in it.segments[0] for i in seg["objects"]})
            assert named == [0, 1]
            for j, (oa, ob) in enumerate(zip(a.objects, b.objects)):
                assert (oa.x, oa.y, oa.angle, oa.shape) == (ob.x, ob.y, ob.angle, ob.shape)
                if j < 2:
                    assert getattr(oa, category) == getattr(b.objects[1 - j], category) != getattr(ob, category)
                else:  # a distractor: unchanged, of the shape neither caption names, never held out
                    assert oa == ob and oa.shape not in (a.objects[0].shape, a.objects[1].shape)
                    assert not swap3d.held_out(oa)
            # A and B share every attribute but the swapped one
            others = [x for x in ("color", "size", "material") if x != category]
            assert all(getattr(a.objects[0], x) == getattr(a.objects[1], x) for x in others)
            if split == "id":
                assert it.held_out() == []
            else:
                assert any((getattr(o, category), o.shape) in swap3d.HELD_OUT[category]
                           for s in it.scenes for o in s.objects)


def test_relation_items_hold_by_clevrs_definition_in_both_images():
    for split in ("id", "ood"):
        for it in _items("relation", split):
            left, front = it.scenes[0].camera.ground_axes()
            rel = next(r for r in swap3d.RELATIONS3D if f" {r} " in it.captions[0])
            a0, b0 = it.scenes[0].objects[:2]
            a1, b1 = it.scenes[1].objects[:2]
            assert swap3d.relation_holds(a0, rel, b0, left, front)
            assert swap3d.relation_holds(b1, rel, a1, left, front)  # caption 1: subject and object swapped
            assert not swap3d.relation_holds(a1, rel, b1, left, front)
            assert (a1.x, a1.y) == (b0.x, b0.y)


def test_relations_by_hand():
    from unbag.world.render3d import Obj3D
    left, front = np.array([1.0, 0.0, 0.0]), np.array([0.0, -1.0, 0.0])
    a, b = Obj3D("cube", "red", "large", "rubber", 1.0, 0.0), Obj3D("sphere", "red", "large", "rubber", 0.0, 0.0)
    assert swap3d.relation_holds(a, "to the left of", b, left, front)
    assert not swap3d.relation_holds(a, "to the right of", b, left, front)
    assert not swap3d.relation_holds(a, "in front of", b, left, front)  # 0 along front: neither
    near = Obj3D("cube", "red", "large", "rubber", 0.1, -0.3)
    assert swap3d.relation_holds(near, "in front of", b, left, front)
    assert not swap3d.relation_holds(near, "to the left of", b, left, front)  # 0.1 is under the 0.2 margin


def test_count_items_swap_the_group_sizes():
    for it in _items("count", "id"):
        groups = [[len(seg["objects"]) for seg in segs] for segs in it.segments]
        assert groups[0] == groups[1][::-1] and groups[0] != groups[1]
        shapes = [[s.objects[seg["objects"][0]].shape for seg in segs] for s, segs in zip(it.scenes, it.segments)]
        assert shapes[0] == shapes[1]
        assert it.scenes[0].camera == it.scenes[1].camera


def test_cogent_anchored_held_out_colours():
    seen_cube = {c for c in swap3d.COLORS3D if (c, "cube") not in swap3d.HELD_OUT["color"]}
    seen_cyl = {c for c in swap3d.COLORS3D if (c, "cylinder") not in swap3d.HELD_OUT["color"]}
    assert seen_cube == {"gray", "blue", "brown", "yellow"} and seen_cyl == {"red", "green", "purple", "cyan"}
    assert not any(shape == "sphere" for pairs in swap3d.HELD_OUT.values() for _, shape in pairs)


def test_ctrl_reads_format_2_and_checks_it(built3d, tmp_path):
    import shutil
    b = benchmarks.load(f"ctrl:{built3d}")
    assert b.info["style"] == "3d" and b.info["render"] == 3 and len(b.items) == 20
    assert b.items[0].meta["masks"][0].endswith("_0.png") and "xyz" in b.items[0].meta["objects"][0][0]
    bad = tmp_path / "bad"
    shutil.copytree(built3d, bad)
    meta = json.loads((bad / "meta.json").read_text())
    (bad / "meta.json").write_text(json.dumps({**meta, "style": "flat"}))
    with pytest.raises(UnbagError, match="style"):
        benchmarks.load(f"ctrl:{bad}")
    (bad / "meta.json").write_text(json.dumps(meta))
    (bad / "masks" / "id-color-0000_1.png").unlink()
    with pytest.raises(UnbagError, match=r"items.jsonl:1: field 'masks'"):
        benchmarks.load(f"ctrl:{bad}")


def test_cli_world_build_and_show_3d(tmp_path, capsys):
    from unbag.cli import main
    assert main(["world", "build", "--style", "3d", "--per-category", "1", "--categories", "color,relation",
                 "--out", str(tmp_path / "w"), "--quiet", "--procs", "1"]) == 0
    assert len((tmp_path / "w" / "items.jsonl").read_text().splitlines()) == 4
    assert main(["world", "show", "--style", "3d", "--n", "1", "--out", str(tmp_path / "s.png")]) == 0
    assert Image.open(tmp_path / "s.png").height > 10 * 128
    with pytest.raises(SystemExit):
        main(["world", "build", "--style", "4d", "--out", str(tmp_path / "x")])
