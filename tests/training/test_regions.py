import itertools
import json
import math

import numpy as np
import pytest
import torch

from unbag.errors import UnbagError
from unbag.sgi.regions import background_color, masked, row_fill
from unbag.training.data import JITTER, WorldSource, batches
from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.regions import alike_but_noun, object_loss
from unbag.world import captions as cap
from unbag.world.phrases import VOCABULARIES, descriptions
from unbag.world.render3d import instances


@pytest.mark.parametrize("world", sorted(VOCABULARIES))
def test_descriptions_are_every_object_the_world_names_once(world):
    got = descriptions(world)
    sizes, colors, materials = VOCABULARIES[world]
    shapes = {"3d": 3, "flat": 5}[world]
    assert len(got) == len(set(got)) == shapes * len(sizes) * len(colors) * len(materials)
    assert all(d.startswith(("a ", "an ")) and len(d.split()) == 5 for d in got)


def _boxes_near(box, px):
    """Every box whose edges lie within JITTER px of `box`'s, clamped to the picture as object views clamp them."""
    r = range(-JITTER, JITTER + 1)
    for d in itertools.product(r, r, r, r):
        x0, y0 = min(max(box[0] - d[0], 0), px - 1), min(max(box[1] - d[1], 0), px - 1)
        yield x0, y0, min(max(box[2] + d[2], x0 + 1), px), min(max(box[3] + d[3], y0 + 1), px)


def test_a_3d_object_view_is_an_objects_box_on_the_rows_fill_and_names_it():
    src = WorldSource(0, 64, "pretraining", "3d")
    for k in range(6):
        s = src.sample(k)
        view, desc = src.object_view(k, s)
        fill = row_fill(s.image)
        inst = instances(s.scene, 64)
        # the view is the picture masked to the visible box of an object it names, jittered
        hits = []
        for i, o in enumerate(s.scene.objects):
            ys, xs = np.nonzero(inst == i + 1)
            vis = (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
            if any(np.array_equal(view, masked(s.image, [b], fill)) for b in _boxes_near(vis, 64)):
                hits.append(cap.phrase(o))
        assert desc in hits, (k, desc, hits)
        again, same = src.object_view(k, src.sample(k))
        assert np.array_equal(again, view) and same == desc  # drawn from the seed and index alone


def test_a_flat_object_view_is_on_the_median_colour():
    src = WorldSource(0, 64, "pretraining", "flat")
    s = src.sample(3)
    view, desc = src.object_view(3, s)
    assert desc in [cap.phrase(o) for o in s.scene.objects]
    fill = background_color(s.image)
    assert ((view == fill).all(-1)).mean() > 0.5  # most of the picture is the fill colour
    assert not np.array_equal(view, s.image)


def test_object_loss_hand_computed():
    objects = torch.tensor([[2.0, 0.0], [0.0, 3.0]])  # unit x, unit y after normalising
    candidates = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 5.0]])
    target = torch.tensor([0, 1])
    scale = torch.tensor(10.0)
    loss, right = object_loss(objects, candidates, target, scale)
    # cosines: object 0 -> 1, 0.6, 0; object 1 -> 0, 0.8, 1
    l0 = -math.log(math.exp(10) / (math.exp(10) + math.exp(6) + 1))
    l1 = -math.log(math.exp(8) / (1 + math.exp(8) + math.exp(10)))
    assert loss.item() == pytest.approx((l0 + l1) / 2, rel=1e-5)
    assert right.item() == 0.5  # object 1 fits the third candidate better than its own


def test_object_loss_among_the_descriptions_alike_but_their_noun():
    cands = ["a red cube", "a red sphere", "a blue cube", "a blue sphere"]
    alike = alike_but_noun(cands)
    assert alike.tolist() == [[True, True, False, False], [True, True, False, False],
                              [False, False, True, True], [False, False, True, True]]
    objects = torch.tensor([[1.0, 0.0]])
    candidates = torch.tensor([[0.0, 1.0], [0.6, 0.8], [1.0, 0.0], [0.8, 0.6]])
    target = torch.tensor([0])
    loss, right = object_loss(objects, candidates, target, torch.tensor(10.0), alike[target])
    # among "a red cube" (cosine 0) and "a red sphere" (0.6) only; the blue ones fit better but do not count
    assert loss.item() == pytest.approx(-math.log(1 / (1 + math.exp(6))), rel=1e-5)
    assert right.item() == 0.0


def test_objects_need_the_scenes_behind_the_pictures(tmp_path):
    f = tmp_path / "pairs.jsonl"
    f.write_text(json.dumps({"image": "x.png", "caption": "a cube"}) + "\n")
    with pytest.raises(UnbagError, match="scenes behind them"):
        batches(f"jsonl:{f}", 0, 1, 64, 0, 1, 0, objects=True)


def test_a_batch_holds_one_object_view_per_picture():
    b = next(batches("world@3d:pretraining", 0, 4, 64, 0, 1, 0, objects=True))
    assert b["object_images"].shape == b["images"].shape and b["object_images"].dtype == torch.uint8
    assert len(b["object_captions"]) == 4 and set(b["object_captions"]) <= set(descriptions("3d"))


@pytest.mark.slow
def test_clip_regions_trains_and_logs_its_object_loss(tmp_path):
    cfg = TrainConfig.for_method("clip-regions", data="world@3d:pretraining", steps=4, batch_size=8, warmup=1,
                                 workers=0, ckpt_every=100, log_every=1, object_weight=2.0, noun_weight=1.0,
                                 vocabulary="3d")
    trainer = Trainer(cfg, tmp_path)
    assert trainer.objective.opts.object_weight == 2.0 and trainer.objective.opts.dense_weight == 1.0
    trainer.fit(progress=False)
    rows = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    for r in rows:
        assert math.isfinite(r["objects"]) and 0 <= r["objects_right"] <= 1
        assert math.isfinite(r["nouns"]) and 0 <= r["nouns_right"] <= 1
        assert r["loss"] > r["objects"] * 2 + r["nouns"]  # the object terms sit on top of clip-dense's


def test_clip_regions_refuses_descriptions_of_another_world():
    from unbag import models
    from unbag.training.objectives import OBJECTIVES

    obj = OBJECTIVES["clip-regions"](vocabulary="3d")
    b = models.load("open_clip:unbag-tiny@random")
    batch = {"pixels": torch.zeros(1, 3, 64, 64), "ids": b.tokenize(["an orange star"]),
             "captions": ["a small orange rubber star"], "object_pixels": torch.zeros(1, 3, 64, 64),
             "object_captions": ["a small orange rubber star"]}
    with pytest.raises(UnbagError, match="not one of the 3d world's"):
        obj(b, batch)
