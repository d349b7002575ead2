import json

import numpy as np
import pytest
from PIL import Image

from unbag.world.io import build
from unbag.world.render import RENDER_VERSION
from unbag.world.swap import CATEGORIES, SPLITS


def _files(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_same_seed_gives_identical_bytes(tmp_path):
    a = build(tmp_path / "a", seed=1, per_category=2, progress=False)
    b = build(tmp_path / "b", seed=1, per_category=2, progress=False)
    c = build(tmp_path / "c", seed=2, per_category=2, progress=False)
    assert _files(a) == _files(b)
    assert _files(a)[next(iter(_files(a)))] is not None and _files(a) != _files(c)


def test_format(tiny_bench):
    meta = json.loads((tiny_bench / "meta.json").read_text())
    assert meta["format"] == "unbag-ctrl" and meta["size"] == 64 and meta["render"] == RENDER_VERSION
    recs = [json.loads(x) for x in (tiny_bench / "items.jsonl").read_text().splitlines()]
    assert len(recs) == len(SPLITS) * len(CATEGORIES) * 3
    for r in recs:
        assert {"id", "split", "category", "images", "captions", "segments", "objects", "held_out"} <= set(r)
        for rel, objs in zip(r["images"], r["objects"]):
            img = np.asarray(Image.open(tiny_bench / rel))
            assert img.shape == (64, 64, 3)
            for o in objs:  # an exact box: the object lies inside it and differs from grey there
                x0, y0, x1, y1 = o["box"]
                assert 0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 64
                patch = img[y0:y1, x0:x1].astype(int)
                assert np.abs(patch - 118).max() > 60


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    import pytest

    import unbag.world.io as wio
    from unbag.errors import UnbagError

    with pytest.raises(UnbagError, match="unknown category"):
        build(tmp_path / "x", per_category=1, categories=["colour"], progress=False)
    calls = []

    def failing_render(scene, px):  # dies part-way, like a full disk or a kill
        calls.append(1)
        if len(calls) > 5:
            raise OSError("disk full")
        return np.zeros((px, px, 3), np.uint8)

    monkeypatch.setattr(wio, "render", failing_render)
    with pytest.raises(OSError):
        build(tmp_path / "y", per_category=2, progress=False, style="flat")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("size", [100_000, 1025])
def test_a_picture_side_past_the_documented_maximum_is_refused(tmp_path, capsys, size):
    from unbag.cli import main
    from unbag.world.styles import MAX_PX

    assert main(["world", "build", "--size", str(size), "--out", str(tmp_path / "w")]) == 2
    assert f"--size {size}: at most {MAX_PX} px" in capsys.readouterr().err and not (tmp_path / "w").exists()
