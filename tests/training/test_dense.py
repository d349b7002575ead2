import json
import math

import pytest
import torch
import torch.nn.functional as F

from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.dense import (
    all_swaps,
    caption_phrases,
    dense_loss,
    late_interaction,
    phrase_swaps,
    shape_swaps,
    swap_loss,
)
from unbag.world.phrases import alternatives
from unbag.world.scene import COLORS


def test_caption_phrases_are_the_object_and_group_phrases():
    phrases, owner = caption_phrases(["a large red cube to the left of two small blue spheres", "a cat"])
    assert phrases == ["a large red cube", "two small blue spheres", "a cat"]  # not the relation
    assert owner.tolist() == [0, 0, 1]


def test_late_interaction_hand_computed():
    # image 0's patches point along x and y, image 1's along -x and y; caption 0 has phrases x and
    # (x+y)/sqrt2, caption 1 the phrase -x
    patches = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]])
    r = 1 / math.sqrt(2)
    phrases = torch.tensor([[1.0, 0.0], [r, r], [-1.0, 0.0]])
    owner = torch.tensor([0, 0, 1])
    li = late_interaction(phrases, owner, patches, 2)
    # caption 0 / image 0: best cosines 1 and r; / image 1: 0 (the y patch) and r
    want = torch.tensor([[(1 + r) / 2, (0 + r) / 2], [0.0, 1.0]])
    assert torch.allclose(li, want)
    loss = dense_loss(phrases * 3, owner, patches * 2, torch.tensor(10.0))  # normalised inside
    logits = 10 * want
    target = torch.arange(2)
    assert torch.isclose(loss, (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2)


def test_phrase_swaps_replace_one_attribute_word_each():
    swaps, owner = phrase_swaps(["a large red metal cube", "two cats", "three small spheres"],
                                torch.Generator().manual_seed(0))
    assert owner.tolist() == [0, 0, 0, 2]
    assert swaps[0].split()[1] == "small" and swaps[0].split()[2:] == ["red", "metal", "cube"]
    w = swaps[1].split()
    assert w[2] not in ("red",) and w[:2] + w[3:] == ["a", "large", "metal", "cube"]
    assert swaps[2] == "a large red rubber cube" and swaps[3] == "three large spheres"


def test_alternatives_are_every_one_attribute_change_in_word_order():
    alts = alternatives("a large red metal cube")
    others = [c for c in COLORS if c != "red"]
    assert alts == (["a small red metal cube"] + [f"a large {c} metal cube" for c in others]
                    + ["a large red rubber cube"])
    assert len(alts) == 9 and alternatives("a cat") == [] and alternatives("two") == [] and alternatives("") == []
    assert alternatives("two cats") == []  # not a shape noun of the world
    assert alternatives("three small spheres") == ["three large spheres", "one small sphere", "two small spheres",
                                                   "four small spheres"]


def test_shape_swaps_use_the_other_shapes_of_the_caption_in_the_nouns_number():
    phrases = ["a small red cube", "two large red spheres", "a star", "a cat", "one blue cone"]
    swaps, owner = shape_swaps(phrases, torch.tensor([0, 0, 0, 1, 1]))
    assert swaps == ["a small red sphere", "a small red star", "two large red cubes", "two large red stars",
                     "a cube", "a sphere"]  # "a cat" has no shape noun; caption 1 names one shape only
    assert owner.tolist() == [0, 0, 1, 1, 2, 2]


def test_all_swaps_groups_attribute_and_shape_swaps_by_phrase():
    phrases = ["a large red cube", "a small blue sphere"]
    swaps, owner = all_swaps(phrases, torch.tensor([0, 0]), shapes=True, generator=torch.Generator().manual_seed(0))
    assert owner.tolist() == [0, 0, 0, 1, 1, 1]  # ascending, as swap_loss wants
    assert swaps[2] == "a large red sphere" and swaps[5] == "a small blue cube"
    plain, plain_owner = phrase_swaps(phrases, torch.Generator().manual_seed(0))
    assert swaps[:2] + swaps[3:5] == plain and all_swaps(phrases, torch.tensor([0, 0]))[1].tolist() == [0, 0, 1, 1]


def test_swap_loss_hand_computed():
    # two images (patches along x / y and along -x / y); phrase 0 (image 0) along x has two swaps
    # (along y and along -x), phrase 1 (image 1) has none, phrase 2 (image 1) along -x has one (x)
    patches = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 0.5]]])
    phrases = torch.tensor([[2.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    owner = torch.tensor([0, 1, 1])
    swaps = torch.tensor([[0.0, 1.0], [-1.0, 0.0], [1.0, 0.0]])
    swap_owner = torch.tensor([0, 0, 2])
    loss = swap_loss(phrases, owner, swaps, swap_owner, patches, torch.tensor(5.0))
    # phrase 0 in image 0: best cosines 1 (itself), 1 (y swap), 0 (-x swap); phrase 2 in image 1: 1 vs 0
    want = (F.cross_entropy(5 * torch.tensor([[1.0, 1.0, 0.0]]), torch.tensor([0]))
            + F.cross_entropy(5 * torch.tensor([[1.0, 0.0]]), torch.tensor([0]))) / 2
    assert torch.isclose(loss, want)


def test_swap_loss_gradients_finite_when_phrases_have_unequal_swaps():
    # phrase 0 has two swaps, phrase 1 one: its row is padded, and a padded -inf times the scale
    # once gave the scale a NaN gradient (0 * inf)
    scale = torch.tensor(5.0, requires_grad=True)
    phrases = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    patches = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    swaps = torch.tensor([[0.6, 0.8], [0.8, 0.6], [0.8, 0.6]])
    swap_loss(phrases, torch.tensor([0, 0]), swaps, torch.tensor([0, 0, 1]), patches, scale).backward()
    assert torch.isfinite(scale.grad) and scale.grad != 0 and torch.isfinite(phrases.grad).all()


@pytest.mark.slow
def test_clip_dense_trains_and_logs_its_dense_loss(tmp_path):
    # the flat world: a 3D sample costs about 45 ms to draw, and 12 steps of 16 would spend most of the test there
    cfg = TrainConfig.for_method("clip-dense", data="world@flat", vocabulary="flat", steps=12, batch_size=16, warmup=2,
                                 workers=0, ckpt_every=100, log_every=1, dense_weight=2.0, swap_weight=0.5)
    trainer = Trainer(cfg, tmp_path)
    assert trainer.objective.opts.dense_weight == 2.0 and trainer.objective.opts.swap_weight == 0.5
    assert not trainer.objective.opts.shape_swaps
    trainer.fit(progress=False)
    rows = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert all("dense" in r and "swap" in r for r in rows) and rows[-1]["dense"] < rows[0]["dense"]


@pytest.mark.slow
def test_clip_dense_with_shape_swaps_on_the_sibling_stream(tmp_path):
    cfg = TrainConfig.for_method("clip-dense", data="world:pretraining-siblings", steps=3, batch_size=16, warmup=1,
                                 workers=0, ckpt_every=100, log_every=1, shape_swaps=True)
    trainer = Trainer(cfg, tmp_path)
    assert trainer.objective.opts.shape_swaps
    trainer.fit(progress=False)
    rows = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(math.isfinite(r["swap"]) and math.isfinite(r["loss"]) for r in rows)


def test_clip_dense_declares_its_options_and_an_older_run_config_still_matches():
    from dataclasses import asdict

    from unbag.errors import UnbagError
    from unbag.training.engine import config_diff

    cfg = TrainConfig.for_method("clip-dense", shape_swaps=True)
    from unbag.world.styles import DEFAULT
    assert cfg.options == {"dense_weight": 1.0, "swap_weight": 1.0, "shape_swaps": True, "vocabulary": DEFAULT}
    old = json.loads(json.dumps({k: v for k, v in asdict(cfg).items() if k != "options"}))  # as saved
    old |= {"dense_weight": 1.0, "swap_weight": 1.0, "shape_swaps": True}
    assert config_diff(old, cfg) == []  # a run begun before options moved under `options`
    assert config_diff(old | {"shape_swaps": False}, cfg) == ["options"]
    saved = json.loads(json.dumps(asdict(cfg)))
    saved["options"].pop("vocabulary")  # saved before the option existed: its default
    assert config_diff(saved, cfg) == []
    with pytest.raises(UnbagError, match="unknown training options"):
        TrainConfig.for_method("clip", dense_weight=2.0)  # another method's option


def test_phrase_swaps_draw_from_the_world_the_captions_speak_of():
    from unbag.errors import UnbagError
    from unbag.training.objectives.dense import DenseObjective
    from unbag.world.phrases import VOCABULARIES
    from unbag.world.swap3d import COLORS3D

    g = torch.Generator().manual_seed(0)
    phrases = ["a large gray metal cube"] * 50
    swaps3d, _ = phrase_swaps(phrases, g, VOCABULARIES["3d"])
    colors = {s.split()[2] for s in swaps3d if s.split()[1] == "large" and s.split()[3] == "metal"}
    assert colors <= set(COLORS3D) - {"gray"} and len(colors) > 3  # CLEVR's colours, never the flat world's orange
    flat, _ = phrase_swaps(phrases, g)  # the flat world has no gray: only size and material change
    assert all(s.split()[2] == "gray" for s in flat) and len(flat) == 100
    assert DenseObjective(vocabulary="3d").opts.vocabulary == "3d"
    with pytest.raises(UnbagError, match="--vocabulary 'clevr'"):
        DenseObjective(vocabulary="clevr")
