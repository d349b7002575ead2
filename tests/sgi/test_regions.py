import numpy as np
import pytest

from unbag.errors import UnbagError
from unbag.sgi.regions import (RegionConfig, background_color, blob_boxes, cropped, grid_boxes, masked,
                               masked_shifted, phase_offsets, proposal_boxes, regions_for)
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
