import numpy as np
import pytest
import torch
from PIL import Image

from unbag.errors import UnbagError
from unbag.sgi.regions import (
    RegionConfig,
    background_color,
    blob_boxes,
    cropped,
    grid_boxes,
    masked,
    masked_shifted,
    phase_offsets,
    proposal_boxes,
    regions_for,
    row_fill,
)
from unbag.world.render import render
from unbag.world.scene import Obj, Scene
from unbag.world.swap import CATEGORIES, build_item


def test_grid_covers_the_image_at_each_scale():
    boxes = grid_boxes(64, 64, (0.5, 1 / 3), 0.5)
    halves = [b for b in boxes if b[2] - b[0] == 32]
    thirds = [b for b in boxes if b[2] - b[0] == 21]
    assert len(halves) == 9 and len(thirds) == 25  # 3x3 and 5x5 windows at 50% overlap
    for group in (halves, thirds):
        covered = np.zeros((64, 64), bool)
        for x0, y0, x1, y1 in group:
            assert 0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 64
            covered[y0:y1, x0:x1] = True
        assert covered.all()


def test_groups_are_unions_and_full_image_only_for_grid():
    img = np.zeros((64, 64, 3), np.uint8)
    gt = [(0, 0, 10, 10), (20, 20, 30, 30), (40, 40, 50, 50)]
    r = regions_for(img, RegionConfig.parse("gt+groups"), gt)
    assert r[:3] == [(b,) for b in gt] and len(r) == 3 + 3 + 1  # singles, pairs, the triple
    assert ((0, 0, 10, 10), (20, 20, 30, 30), (40, 40, 50, 50)) in r
    assert ((0, 0, 64, 64),) not in r
    assert ((0, 0, 64, 64),) in regions_for(img, RegionConfig.parse("grid"))
    with pytest.raises(UnbagError, match="needs a benchmark that ships boxes"):
        regions_for(img, RegionConfig.parse("gt"))
    with pytest.raises(UnbagError, match="unknown region source"):
        RegionConfig.parse("boxes")


def _scene(size):
    return Scene([Obj("sphere", "red", size, "rubber", 0.3, 0.3), Obj("cube", "blue", "large", "rubber", 0.7, 0.7)], 1)


def test_masking_keeps_size_and_position_cropping_does_not():
    red = lambda a: ((a[..., 0] > 180) & (a[..., 1] < 90)).sum()  # noqa: E731
    sizes = {}
    for size in ("small", "large"):
        sc = _scene(size)
        img = render(sc, 64)
        box = tuple(sc.objects[0].box(64))
        m = masked(img, (box,), background_color(img))
        assert red(m) == red(img)  # every pixel of the object kept, in place
        assert (m[:, 40:] == background_color(img)).all()  # the other object is gone
        from PIL import Image
        c = np.asarray(Image.fromarray(cropped(img, (box,))).resize((64, 64)))
        sizes[size] = (red(m), red(c))
    assert sizes["large"][0] > 2 * sizes["small"][0]  # masked: the size difference survives
    assert sizes["large"][1] < 1.3 * sizes["small"][1]  # cropped and zoomed: it is gone


def test_row_fill_is_the_empty_floor_of_a_shaded_scene_and_masking_takes_it():
    """A floor whose shade changes with the row (a 3D scene in perspective): each row's median
    is that floor where objects cover less than half of the row; masked onto it, a region sits on
    the floor it stood on, where the median colour would paint one flat grey."""
    floor = np.repeat(np.linspace(60, 200, 64).astype(np.uint8)[:, None, None], 64, 1).repeat(3, 2)
    img = floor.copy()
    img[10:20, 5:15] = (200, 30, 30)  # two objects, each under half of its rows
    img[30:45, 40:60] = (30, 30, 200)
    fill = row_fill(img)
    assert fill.shape == img.shape and (fill == floor).all()
    m = masked(img, ((5, 10, 15, 20),), fill)
    assert (m[10:20, 5:15] == img[10:20, 5:15]).all() and (m[30:45, 40:60] == floor[30:45, 40:60]).all()
    assert not (masked(img, ((5, 10, 15, 20),), background_color(img))[30:45, 40:60] == floor[30:45, 40:60]).all()
    from unbag.sgi.config import SGIConfig
    with pytest.raises(UnbagError, match="unknown SGI fill 'floor'; use one of median, rows"):
        SGIConfig(fill="floor")


@pytest.mark.parametrize("finder", [blob_boxes, proposal_boxes])
def test_class_agnostic_boxes_find_the_objects(finder):
    hits = total = 0
    for cat in CATEGORIES:
        for i in range(6):
            for sc in build_item(2, "ood", cat, i).scenes:
                img = render(sc, 64)
                found = finder(img)
                total += 1
                hits += len(found) == len(sc.objects) and all(
                    any(f[0] <= o.x * 64 <= f[2] and f[1] <= o.y * 64 <= f[3] for f in found) for o in sc.objects)
    assert hits / total >= 0.9


def test_phase_offsets_stay_inside_the_frame_at_the_same_phase():
    assert phase_offsets(((20, 20, 30, 30),), (64, 64), 8, 2) == [(0, 0), (4, 4)]
    assert phase_offsets(((20, 20, 30, 30),), (64, 64), 8, 4) == [(0, 0), (2, 2), (4, 4), (6, 6)]
    # touching the right edge: x shifts by 4 - 8 = -4 (same phase mod 8), y by +4
    assert phase_offsets(((54, 10, 64, 20),), (64, 64), 8, 2) == [(0, 0), (-4, 4)]
    # a union spanning the frame cannot move: no shift
    assert phase_offsets(((0, 0, 10, 10), (54, 54, 64, 64)), (64, 64), 8, 2) == [(0, 0), (0, 0)]


def test_shifted_mask_moves_the_region_and_nothing_else():
    img = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    fill = np.array([1, 2, 3], np.uint8)
    out = masked_shifted(img, ((10, 12, 20, 22),), fill, -4, 4)
    assert np.array_equal(out[16:26, 6:16], img[12:22, 10:20])
    keep = np.zeros((64, 64), bool)
    keep[16:26, 6:16] = True
    assert (out[~keep] == fill).all()


@pytest.mark.parametrize("shape, spots", [((48, 128), "left-right"), ((128, 48), "top-bottom")])
def test_objects_at_the_edges_of_non_square_images_survive_mask_mode(shape, spots):
    """The encoder centre-crops a non-square image: SGI pads it to a square first, so a region at
    any edge still reaches the encoder (it used to vanish from a 128x48 image's left edge)."""
    from unbag import models
    from unbag.sgi.encode import _inputs
    from unbag.sgi.regions import RegionConfig, framed, regions_for

    h, w = shape
    img = np.full((h, w, 3), 200, np.uint8)
    if spots == "left-right":
        img[18:30, 0:10], img[18:30, w - 10:w] = (220, 20, 20), (20, 20, 220)
    else:
        img[0:10, 18:30], img[h - 10:h, 18:30] = (220, 20, 20), (20, 20, 220)
    backend = models.load("open_clip:unbag-tiny@random")
    blank = backend.preprocess(Image.fromarray(np.full((h, w, 3), 200, np.uint8)))
    for frame in ("pad", "crop"):
        sq, _ = framed(img, frame)
        assert sq.shape[0] == sq.shape[1] == (max(h, w) if frame == "pad" else min(h, w))
        singles = [r for r in regions_for(sq, RegionConfig.parse("blobs")) if len(r) == 1 and
                   (r[0][2] - r[0][0]) * (r[0][3] - r[0][1]) < sq.shape[0] ** 2 / 2]
        if frame == "pad":  # both objects found, and each region's input shows its object
            assert len(singles) == 2
            x = _inputs(backend, sq, singles, "mask")
            assert all(not torch.allclose(x[k], blank, atol=1e-3) for k in range(2))
        else:  # the encoder's own square holds neither edge object
            assert singles == []
    # through SGI's region encoder: each edge object's embedding differs from an empty region's
    from unbag.benchmarks.base import Benchmark, Item
    from unbag.sgi.config import SGIConfig
    from unbag.sgi.encode import encode_regions

    blank_img = np.full((h, w, 3), 200, np.uint8)
    bench = Benchmark("edges", "edges", [Item("x", [img, blank_img], ["a", "b"], {})])
    got = encode_regions(backend, bench, SGIConfig(regions="blobs", phases=1), cache=None)
    empty = got[1].emb[0]  # the blank image has one region: the whole picture, all background
    small = [k for k, r in enumerate(got[0].regions) if (r[0][2] - r[0][0]) * (r[0][3] - r[0][1]) < 40 * 40]
    assert len(small) == 2 and all(float((got[0].emb[k] - empty).abs().max()) > 1e-4 for k in small)


def test_benchmark_boxes_move_into_the_frame():
    from unbag.sgi.regions import framed

    img = np.zeros((40, 100, 3), np.uint8)
    sq, gt = framed(img, "pad", [[0, 0, 10, 10], [90, 30, 100, 40]])
    assert sq.shape == (100, 100, 3) and gt == [[0, 30, 10, 40], [90, 60, 100, 70]]
    sq, gt = framed(img, "crop", [[0, 0, 10, 10], [40, 0, 60, 40]])
    assert sq.shape == (40, 40, 3) and gt == [[10, 0, 30, 40]]  # the first box lies outside the crop


def test_region_cache_keeps_its_memory_bound_dropping_the_least_recently_used():
    import torch

    from unbag.sgi.cache import RegionCache

    c = RegionCache(max_bytes=96)  # a [2, 4] float32 tensor is 32 bytes: room for three
    for k in "abc":
        c.put(k, torch.zeros(2, 4))
    assert c.get("a") is not None  # a is now the most recent
    c.put("d", torch.zeros(2, 4))
    assert c.get("b") is None and all(c.get(k) is not None for k in "acd") and c.mem.total == 96
    c.put("a", torch.zeros(1, 4))  # replacing an entry counts its new size
    assert c.mem.total == 80 and list(c.mem) == ["c", "d", "a"]
