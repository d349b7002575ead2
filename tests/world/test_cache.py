"""Drawn SWAP items kept on disk (world/cache.py): read back only for the same recipe, drawn once."""
import json

import numpy as np
import pytest
import torch

from unbag.benchmarks import ctrl
from unbag.world import cache, io
from unbag.world.styles import world


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """The cache in tmp_path, and the 3D items drawn (ids) while it is on."""
    monkeypatch.setenv("UNBAG_CACHE", str(tmp_path / "c"))
    drawn = []
    real = io.item3d

    def item3d(job):
        drawn.append("-".join(map(str, job[1:4])))
        return real(job)

    monkeypatch.setattr(io, "item3d", item3d)
    return drawn


def _same(a, b) -> None:
    assert [it.id for it in a.items] == [it.id for it in b.items]
    for x, y in zip(a.items, b.items):
        assert x.captions == y.captions and x.group == y.group and x.meta == y.meta
        assert all(np.array_equal(p, q) for p, q in zip(x.images, y.images))


def test_kept_items_are_read_back_and_equal_the_drawn_ones(counted, monkeypatch, tmp_path):
    first = ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1)
    assert len(counted) == 10 and len(first.items) == 10
    where = cache.folder(world("3d"), 5, 32)
    assert where.parent == tmp_path / "c" / "ctrl" / "3d" and len(list(where.glob("*.npz"))) == 10
    again = ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1)
    assert len(counted) == 10  # nothing drawn the second time
    _same(first, again)
    ood = ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1, split="ood")  # one split: read back
    assert len(counted) == 10 and [it.id for it in ood.items] == [it.id for it in first.items if it.id.startswith("ood-")]
    more = ctrl.generated(seed=5, per_category=2, px=32, style="3d", procs=1)
    assert len(counted) == 20 and sorted(counted[10:]) == sorted(f"{s}-{c}-1" for s in ("id", "ood")
                                                                  for c in world("3d").categories())
    by_id = {it.id: it for it in more.items}
    assert all(np.array_equal(by_id[it.id].images[k], it.images[k]) for it in first.items for k in (0, 1))
    monkeypatch.setenv("UNBAG_CACHE", "off")
    _same(ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1), first)  # the cache changes nothing


def test_another_recipe_draws_again(counted, monkeypatch):
    ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1, categories=["color"])
    assert len(counted) == 2
    ctrl.generated(seed=6, per_category=1, px=32, style="3d", procs=1, categories=["color"])  # another seed
    ctrl.generated(seed=5, per_category=1, px=40, style="3d", procs=1, categories=["color"])  # another side
    assert len(counted) == 6
    monkeypatch.setattr(cache, "code_version", lambda: "edited")  # the world's code changed
    ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1, categories=["color"])
    assert len(counted) == 8
    w = world("3d")
    assert cache.folder(w, 5, 32, "cuda:0") != cache.folder(w, 5, 32)  # a GPU's pixels are kept apart
    assert cache.recipe(w, 5, 224)["render"] == 4 and cache.recipe(w, 5, 96)["render"] == 3
    monkeypatch.setattr(torch, "__version__", "9.9.9")  # another torch may round the last bits otherwise
    ctrl.generated(seed=5, per_category=1, px=32, style="3d", procs=1, categories=["color"])
    assert len(counted) == 10


def test_an_unreadable_item_is_drawn_again_and_replaced(counted):
    first = ctrl.generated(seed=7, per_category=1, px=32, style="3d", procs=1, categories=["size"])
    where = cache.folder(world("3d"), 7, 32)
    (where / "ood-size-0000.npz").write_bytes(b"half a file")
    (where / "id-size-0000.npz").replace(where / "keep.npz")
    again = ctrl.generated(seed=7, per_category=1, px=32, style="3d", procs=1, categories=["size"])
    assert sorted(counted[2:]) == ["id-size-0", "ood-size-0"]
    _same(first, again)
    assert len(list(where.glob("*.npz"))) == 3  # both rewritten whole; the user's own file left alone


def test_off_keeps_nothing_and_the_flat_world_is_never_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("UNBAG_CACHE", "off")
    assert cache.root() is None and cache.folder(world("3d"), 0, 32) is None
    monkeypatch.setenv("UNBAG_CACHE", str(tmp_path))
    assert cache.folder(world("flat"), 0, 32) is None  # a flat picture draws faster than it reads
    ctrl.generated(seed=0, per_category=1, style="flat")
    assert not any(tmp_path.iterdir())
    monkeypatch.delenv("UNBAG_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.root() == tmp_path / "xdg" / "unbag"


def test_world_build_keeps_a_folder_built_from_the_same_recipe(tmp_path, monkeypatch, capsys):
    from unbag.utils import up_to_date
    out = tmp_path / "b"
    io.build(out, seed=2, per_category=1, px=32, categories=["color"], progress=False, style="3d")
    stamp = (out / "items.jsonl").stat().st_mtime_ns
    calls = []
    monkeypatch.setattr(io, "build3d", lambda *a, **k: calls.append(a) or out)
    io.build(out, seed=2, per_category=1, px=32, categories=["color"], progress=True, style="3d")
    assert calls == [] and "up to date" in capsys.readouterr().err
    for change in ({"seed": 3}, {"px": 40}, {"per_category": 2}, {"categories": ["color", "size"]}):
        io.build(out, **({"seed": 2, "per_category": 1, "px": 32, "categories": ["color"]} | change), progress=False,
                 style="3d")
    io.build(out, seed=2, per_category=1, px=32, categories=["color"], progress=False, style="3d", overwrite=True)
    monkeypatch.setattr(cache, "code_version", lambda: "edited")
    io.build(out, seed=2, per_category=1, px=32, categories=["color"], progress=False, style="3d")
    assert len(calls) == 6 and (out / "items.jsonl").stat().st_mtime_ns == stamp
    monkeypatch.undo()
    recipe = json.loads((out / ".unbag-output").read_text())["recipe"]
    assert up_to_date(out, "world build", recipe)
    (out / "notes.txt").write_text("mine")  # a file it did not write: not as built (world build refuses it)
    assert not up_to_date(out, "world build", recipe)
    (out / "notes.txt").unlink()
    (out / "images" / "id-color-0000_0.png").unlink()  # a file it wrote has gone: built again
    assert not up_to_date(out, "world build", recipe)


def test_a_cache_that_cannot_be_written_is_warned_about_once(monkeypatch, tmp_path):
    from unbag.errors import UnbagWarning
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("UNBAG_CACHE", str(blocker))
    with pytest.warns(UnbagWarning, match="cannot keep drawn ctrl items") as caught:
        b = ctrl.generated(seed=1, per_category=1, px=32, style="3d", procs=1, categories=["color"])
    assert len(b.items) == 2 and len(caught) == 1 and blocker.read_text() == "not a folder"


@pytest.mark.parametrize("damage", ["zeroed", "truncated"])
def test_a_kept_item_whose_file_changed_is_drawn_again_with_a_warning(counted, damage):
    import io as io_
    import zipfile

    first = ctrl.generated(seed=8, per_category=1, px=32, style="3d", procs=1, categories=["color"])
    f = cache.folder(world("3d"), 8, 32) / "ood-color-0000.npz"
    if damage == "zeroed":  # a valid file whose pictures are no longer the drawn ones
        with np.load(f, allow_pickle=False) as z:
            record = z["record"]
            images = np.zeros_like(z["images"])
        buf = io_.BytesIO()
        np.savez_compressed(buf, images=images, record=record)
        f.write_bytes(buf.getvalue())
    else:
        f.write_bytes(f.read_bytes()[:100])
        with pytest.raises(zipfile.BadZipFile):
            zipfile.ZipFile(f)
    with pytest.warns(UserWarning, match="ood-color-0000.npz: a kept ctrl item that cannot be read or whose pictures "
                                         "changed"):
        again = ctrl.generated(seed=8, per_category=1, px=32, style="3d", procs=1, categories=["color"])
    assert counted[2:] == ["ood-color-0"]
    _same(first, again)
