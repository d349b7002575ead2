"""SGI's learned region source: its targets and decoding by hand, and the shipped proposer on scenes."""
import math

import numpy as np
import pytest
import torch

from unbag.sgi.proposer import STRIDE, Proposer, decode, focal_loss, targets


def _map(boxes, px=64):
    inst = np.zeros((px, px), np.int32)
    for k, (x0, y0, x1, y1) in enumerate(boxes, 1):
        inst[y0:y1, x0:x1] = k
    return inst


def test_targets_put_a_unit_gaussian_at_each_box_centre_with_its_size():
    heat, size, centre = targets(_map([(10, 4, 20, 8)]))
    assert heat.shape == (32, 32) and size.shape == (2, 32, 32)
    # box centre (15, 6) px -> (7.5, 3.0) cells: the cell (row 3, col 7) holds it
    assert np.argwhere(centre).tolist() == [[3, 7]]
    assert heat[3, 7] == 1 and (heat < 1).sum() == heat.size - 1
    assert math.isclose(heat[3, 8], math.exp(-1 / (2 * 0.8 ** 2)), rel_tol=1e-5)
    assert size[:, 3, 7].tolist() == pytest.approx([math.log(10), math.log(4)])
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
    assert decode(logits, size) == decode(logits, size, pad=0)  # unpadded by default: small objects keep their IoU  # below the threshold: nothing


def test_targets_and_decode_round_trip_on_separate_objects():
    boxes = [(4, 30, 16, 44), (30, 10, 38, 20), (44, 40, 60, 58)]
    heat, size, centre = targets(_map(boxes))
    logits = torch.logit(torch.from_numpy(heat).clamp(1e-4, 1 - 1e-4))[None]
    got = decode(logits, torch.from_numpy(size)[None], threshold=0.5, pad=0)[0]
    from unbag.sgi.regions import iou
    assert len(got) == 3 and all(max(iou(b, g) for g in got) >= 0.7 for b in boxes)


def test_focal_loss_is_low_for_the_target_itself_and_high_for_its_opposite():
    heat, _, centre = targets(_map([(10, 10, 30, 30), (40, 40, 50, 50)]))
    h, c = torch.from_numpy(heat)[None], torch.from_numpy(centre)[None]
    good = torch.where(c, 8.0, -8.0)
    assert float(focal_loss(good, h, c)) < 1e-3 < 1.0 < float(focal_loss(-good, h, c))


def test_the_network_keeps_half_the_resolution_and_ignores_the_batch_in_eval():
    torch.manual_seed(0)
    m = Proposer().eval()
    x = torch.rand(3, 3, 64, 64)
    logits, size = m(x)
    assert logits.shape == (3, 64 // STRIDE, 64 // STRIDE) and size.shape == (3, 2, 32, 32)
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
    from unbag.sgi.proposer import batch_size, object_boxes, object_boxes_many, training_data

    images, _ = training_data(20, seed=998)
    alone = [object_boxes(img) for img in images]
    assert sum(map(len, alone)) >= 40  # scenes of 3 to 10 objects: the check below compares real boxes
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


@pytest.mark.slow
def test_the_shipped_proposer_finds_one_box_per_object_on_unseen_training_stream_scenes():
    from unbag.sgi.proposer import object_boxes, training_data
    from unbag.sgi.regions import iou
    from unbag.world.render3d import visible

    images, maps = training_data(60, seed=999)  # a seed the shipped proposer was not trained on
    best, boxes = [], []
    for img, inst in zip(images, maps):
        gt = [v["box"] for v in visible(inst, int(inst.max()))]
        got = object_boxes(img)
        best += [max((iou(b, g) for g in got), default=0) for b in gt]
        boxes.append(len(got) / len(gt))
    best = np.array(best)
    # measured when shipped (178 objects): 81% at IoU 0.5 (objects of ~11 visible pixels lose IoU
    # to a pixel of offset; 90% on the 3D ctrl's pictures), one box per object
    assert (best >= 0.5).mean() >= 0.75 and (best >= 0.3).mean() >= 0.9, ((best >= 0.5).mean(), (best >= 0.3).mean())
    assert 0.9 <= np.mean(boxes) <= 1.1, np.mean(boxes)
