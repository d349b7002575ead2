"""SGI's learned region source: its targets and decoding by hand, and the shipped proposer on scenes."""
import math

import numpy as np
import pytest
import torch

from unbag.sgi.proposer import STRIDE, Proposer, decode
from unbag.training.proposer import focal_loss, targets
from unbag.world.worlds.clevr3d import PX as PX_3D


def _map(boxes, px=64):
    inst = np.zeros((px, px), np.int32)
    for k, (x0, y0, x1, y1) in enumerate(boxes, 1):
        inst[y0:y1, x0:x1] = k
    return inst


def test_targets_put_a_unit_gaussian_at_each_box_centre_with_its_size():
    heat, size, centre = targets(_map([(10, 4, 20, 8)]))
    assert heat.shape == (32, 32) and size.shape == (4, 32, 32)
    # box centre (15, 6) px -> (7.5, 3.0) cells: the cell (row 3, col 7) holds it, its centre at
    # (7.5, 3.5): offset (0, -0.5) cells
    assert np.argwhere(centre).tolist() == [[3, 7]]
    assert heat[3, 7] == 1 and (heat < 1).sum() == heat.size - 1
    assert math.isclose(heat[3, 8], math.exp(-1 / (2 * 0.8 ** 2)), rel_tol=1e-5)
    assert size[:, 3, 7].tolist() == pytest.approx([math.log(10), math.log(4), 0.0, -0.5])
    assert (size[:, centre == 0] == 0).all()


def test_decode_reads_a_box_back_from_a_peak_and_its_size():
    logits = torch.full((1, 32, 32), -10.0)
    size = torch.zeros(1, 2, 32, 32)
    logits[0, 3, 7] = 5.0
    size[0, :, 3, 7] = torch.log(torch.tensor([10.0, 4.0]))
    # centre of cell (3, 7) = (15, 7) px; 10 x 4 around it, padded by a pixel
    assert decode(logits, size, threshold=0.3, pad=1) == [[(9, 4, 21, 10)]]
    assert decode(logits, size, threshold=0.3, pad=0) == [[(10, 5, 20, 9)]]
    assert decode(logits - 20, size, threshold=0.3) == [[]]
    assert decode(logits, size) == decode(logits, size, pad=0)  # unpadded by default: small objects keep their IoU
    # with an offset channel pair the centre moves inside its cell: (+0.5, -0.5) cells = (+1, -1) px
    off = torch.cat([size, torch.zeros(1, 2, 32, 32)], 1)
    assert decode(logits, off, pad=0) == decode(logits, size, pad=0)
    off[0, 2:, 3, 7] = torch.tensor([0.5, -0.5])
    assert decode(logits, off, pad=0) == [[(11, 4, 21, 8)]]
    # read at half the picture's size: every length doubles (centre (30, 14), 20 x 8)
    assert decode(logits, size, pad=0, scale=2.0) == [[(20, 10, 40, 18)]]
    # clipped to the picture: a tall box at the bottom edge of a 64 x 128 (h x w) picture
    wide, wsize = torch.full((1, 32, 64), -10.0), torch.zeros(1, 2, 32, 64)
    wide[0, 31, 60] = 5.0
    wsize[0, :, 31, 60] = torch.log(torch.tensor([4.0, 30.0]))
    assert decode(wide, wsize, pad=0) == [[(119, 48, 123, 64)]]


def test_a_picture_is_read_with_its_shorter_side_at_the_proposers_size():
    from unbag.sgi.proposer import read_size
    assert read_size(64, 64, 96) == (96, 96) and read_size(96, 96, 96) == (96, 96)
    assert read_size(480, 640, 96) == (96, 128) and read_size(50, 70, 96) == (96, 134)  # even sides
    assert read_size(128, 128, 64) == (64, 64)


def test_targets_and_decode_round_trip_on_separate_objects():
    boxes = [(4, 30, 16, 44), (30, 10, 38, 20), (44, 40, 60, 58), (9, 3, 12, 8)]  # odd sizes too
    heat, size, centre = targets(_map(boxes))
    logits = torch.logit(torch.from_numpy(heat).clamp(1e-4, 1 - 1e-4))[None]
    got = decode(logits, torch.from_numpy(size[:2])[None], threshold=0.5, pad=0)[0]
    from unbag.sgi.regions import iou
    assert len(got) == 4 and all(max(iou(b, g) for g in got) >= 0.5 for b in boxes)
    # with the offsets every box comes back exactly (a half-pixel centre rounds outwards)
    exact = decode(logits, torch.from_numpy(size)[None], threshold=0.5, pad=0)[0]
    assert sorted(exact) == sorted([(4, 30, 16, 44), (30, 10, 38, 20), (44, 40, 60, 58), (9, 3, 12, 8)])


def test_focal_loss_is_low_for_the_target_itself_and_high_for_its_opposite():
    heat, _, centre = targets(_map([(10, 10, 30, 30), (40, 40, 50, 50)]))
    h, c = torch.from_numpy(heat)[None], torch.from_numpy(centre)[None]
    good = torch.where(c, 8.0, -8.0)
    assert float(focal_loss(good, h, c)) < 1e-3 < 1.0 < float(focal_loss(-good, h, c))


def test_the_network_keeps_half_the_resolution_and_ignores_the_batch_in_eval():
    torch.manual_seed(0)
    x = torch.rand(3, 3, 64, 64)
    for offset, channels in ((False, 2), (True, 4)):
        m = Proposer(offset=offset).eval()
        logits, size = m(x)
        assert logits.shape == (3, 64 // STRIDE, 64 // STRIDE) and size.shape == (3, channels, 32, 32)
        assert torch.allclose(m(x[:1])[0], logits[:1], atol=1e-5)


def test_folding_the_batch_norms_keeps_the_function():
    from unbag.sgi.proposer import folded
    torch.manual_seed(0)
    m = Proposer().train()
    for _ in range(3):  # running statistics away from their initial 0 / 1
        m(torch.rand(4, 3, 64, 64) * 2)
    m.eval()
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        want = m(x)
        got = folded(m)(x)
    assert not any(isinstance(layer, torch.nn.BatchNorm2d) for layer in m.body)
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(want, got))


def test_a_pictures_boxes_do_not_depend_on_its_batch_nor_on_the_thread_count():
    from unbag.sgi.proposer import batch_size, object_boxes, object_boxes_many
    from unbag.training.proposer import training_data

    images, _ = training_data(20, seed=998)
    alone = [object_boxes(img) for img in images]
    assert sum(map(len, alone)) >= 40  # scenes of 1 to 5 objects: the check below compares real boxes
    # 20 pictures: a full pass of 16 and a padded one of 4; in reverse, other neighbours in each pass
    assert object_boxes_many(list(images)) == alone
    assert object_boxes_many(list(images[::-1])) == alone[::-1]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = object_boxes_many(list(images))
        torch.set_num_threads(2)
        two = object_boxes_many(list(images))
    finally:
        torch.set_num_threads(before)
    assert one == two == alone
    # pictures of two sizes in one call: each size its own passes, each picture its own boxes
    big = np.ascontiguousarray(np.kron(images[0], np.ones((2, 2, 1), np.uint8)))
    mixed = object_boxes_many([images[0], big, images[1]])
    assert mixed[0] == alone[0] and mixed[2] == alone[1] and mixed[1] == object_boxes(big)
    assert batch_size(64, 64) == 16 and batch_size(128, 128) == 4 and batch_size(480, 640) == 1


def test_the_objects_of_a_picture_of_another_size_are_found_at_its_own_scale():
    from unbag.sgi.proposer import object_boxes_many, shipped
    from unbag.sgi.regions import iou
    from unbag.world.render3d import instances, picture, visible
    from unbag.world.stream3d import training_scene

    px = shipped()[1]["data"]["px"]
    for other in (2 * px // 3 // 2 * 2, 3 * px // 2 // 2 * 2):  # 64 and 144 for a 96 px proposer
        scenes = [training_scene(np.random.default_rng([997, k]), other, allow_held_out=True)[0] for k in range(12)]
        got = object_boxes_many([picture(s, other) for s in scenes])
        numbered, best = [], []
        for s, boxes in zip(scenes, got):
            gt = [v["box"] for v in visible(instances(s, other), len(s.objects)) if v["box"]]
            numbered.append(len(boxes) == len(gt))
            best += [max((iou(g, b) for b in boxes), default=0.0) for g in gt]
            assert all(0 <= x0 < x1 <= other and 0 <= y0 < y1 <= other for x0, y0, x1, y1 in boxes)
        # read as they are, 64 px pictures are numbered right by a 96 px proposer 58% of the time;
        # brought to its size, 98% of 1,000, with 90% of their objects at IoU 0.5 (docs/sgi.md);
        # a pixel of a small picture is much of a small object's box: IoU 0.3 says each was found
        assert np.mean(numbered) >= 0.8 and np.mean(np.array(best) >= 0.3) >= 0.9, (other, numbered, best)


@pytest.mark.slow
def test_the_shipped_proposer_finds_one_box_per_object_on_unseen_training_stream_scenes():
    from unbag.sgi.proposer import object_boxes, shipped
    from unbag.sgi.regions import iou
    from unbag.training.proposer import training_data
    from unbag.world.render3d import visible

    # a seed the shipped proposer was not trained on, at the size it was trained at
    images, maps = training_data(60, seed=999, px=shipped()[1]["data"]["px"])
    best, boxes = [], []
    for img, inst in zip(images, maps):
        gt = [v["box"] for v in visible(inst, int(inst.max()))]
        got = object_boxes(img)
        best += [max((iou(b, g) for g in got), default=0) for b in gt]
        boxes.append(len(got) / len(gt))
    best = np.array(best)
    # measured when shipped (178 objects; 2026-12-05): 92% at IoU 0.5 and 99% at 0.3, 0.99 boxes per
    # object (the proposer before it, without centre offsets: 81% at IoU 0.5, where objects of ~11
    # visible pixels lost IoU to a pixel of offset)
    assert (best >= 0.5).mean() >= 0.88 and (best >= 0.3).mean() >= 0.97, ((best >= 0.5).mean(), (best >= 0.3).mean())
    assert 0.9 <= np.mean(boxes) <= 1.1, np.mean(boxes)


def test_fuller_scenes_hold_two_groups_alike_in_all_but_shape():
    from unbag.training.proposer import crowded_objects
    for k in range(30):
        objs = crowded_objects(np.random.default_rng(k))
        assert 2 <= len(objs) <= 8
        kinds = {(o.color, o.size, o.material) for o in objs}
        # some look (colour, size, material) is shared by objects of two shapes: the two groups
        assert any(len({o.shape for o in objs if (o.color, o.size, o.material) == a}) >= 2 for a in kinds)


class _Oracle(torch.nn.Module):
    """Answers each picture with the targets of its own instance map (looked up by its pixels)."""

    def __init__(self, images, maps):
        super().__init__()
        self.out = {img.tobytes(): targets(m) for img, m in zip(images, maps)}

    def forward(self, x):
        imgs = (x * 255).round().byte().permute(0, 2, 3, 1).numpy()
        tg = [self.out[i.tobytes()] for i in imgs]
        heat = torch.from_numpy(np.stack([t[0] for t in tg]))
        return torch.logit(heat.clamp(1e-4, 1 - 1e-4)), torch.from_numpy(np.stack([t[1] for t in tg]))


def test_evaluate_counts_pictures_numbered_and_objects_found_by_hand():
    from unbag.training.proposer import evaluate
    images = np.zeros((3, 64, 64, 3), np.uint8)
    images[1, 0, 0] = 1
    images[2, 0, 0] = 2  # three distinct pictures
    maps = np.stack([_map([(4, 4, 14, 14)]), _map([(4, 4, 14, 14), (30, 30, 50, 50)]),
                     _map([(4, 4, 14, 14), (20, 4, 28, 12), (40, 40, 60, 60)])])
    right = evaluate(_Oracle(images, maps), 0.5, images, maps)
    assert (right["pictures"], right["numbered"], right["iou50"], right["iou30"]) == (3, 100.0, 100.0, 100.0)
    assert right["by_objects"][3] == {"pictures": 1, "numbered": 100.0, "iou50": 100.0, "iou30": 100.0}
    # the oracle shown the first picture's map for the second: one box of two, 1 object of 2 found
    wrong = _Oracle(images, maps)
    wrong.out[images[1].tobytes()] = targets(maps[0])
    got = evaluate(wrong, 0.5, images, maps)
    assert got["numbered"] == round(100 * 2 / 3, 2) and got["iou50"] == round(100 * 5 / 6, 2)
    assert got["by_objects"][2] == {"pictures": 1, "numbered": 0.0, "iou50": 50.0, "iou30": 50.0}


def test_training_writes_weights_that_load_and_a_record_with_its_held_out_measures(tmp_path):
    import json

    from safetensors.torch import load_file

    from unbag.training.proposer import train
    out = train(tmp_path / "p", n=8, steps=3, batch=4, width=8, n_val=4, crowded=0.5, data_cache=tmp_path / "cache")
    record = json.loads((out / "proposer.json").read_text())
    assert record["offset"] and record["data"]["crowded"] == 0.5 and record["held_out"]["pictures"] == 4
    m = Proposer(record["width"], record["offset"])
    m.load_state_dict(load_file(str(out / "weights.safetensors")))
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        f"proposer-data-n4-seed1000-crowded0.5-px{PX_3D}.npz", f"proposer-data-n8-seed0-crowded0.5-px{PX_3D}.npz"]
    # the same run again reads its pictures back and trains the same weights
    again = train(tmp_path / "q", n=8, steps=3, batch=4, width=8, n_val=4, crowded=0.5, data_cache=tmp_path / "cache")
    a, b = load_file(str(out / "weights.safetensors")), load_file(str(again / "weights.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # at another size: pictures of that size, kept under their own name, and the size recorded
    big = train(tmp_path / "r", n=8, steps=1, batch=4, width=8, n_val=0, crowded=0.5, data_cache=tmp_path / "cache",
                px=32)
    assert json.loads((big / "proposer.json").read_text())["data"]["px"] == 32
    with np.load(tmp_path / "cache" / "proposer-data-n8-seed0-crowded0.5-px32.npz") as f:
        assert f["images"].shape == (8, 32, 32, 3) and f["maps"].shape == (8, 32, 32)


@pytest.mark.slow
def test_pictures_rendered_over_two_processes_are_the_same():
    from unbag.training.proposer import training_data
    one = training_data(6, seed=5, crowded=0.5)
    two = training_data(6, seed=5, crowded=0.5, procs=2)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))
    assert one[1].max(axis=(1, 2)).tolist() != training_data(6, seed=5)[1].max(axis=(1, 2)).tolist()  # the fuller scenes
