"""FSC-CLIP's losses (arXiv 2410.05210) against hand-computed cases, its LoRA, its negatives and training."""
import json
import math

import numpy as np
import pytest
import torch

from unbag.training import lora
from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.fsc_clip import bigram_shuffle, fsc_negatives, local_cosines, local_scores, scr_loss


def test_scr_by_hand():
    # logits [positive, n1, n2 (missing: a zero vector, logit 0), n3]; K = 3 present classes
    z, m = torch.tensor([[3.0, 1.0, 0.0, 2.0]]), torch.tensor([[True, False, True]])
    assert scr_loss(z, m).item() == pytest.approx(0.074218, abs=1e-6)
    assert scr_loss(z, m, gamma=0.0).item() == pytest.approx(0.460190, abs=1e-6)  # label-smoothed CE
    assert scr_loss(z, m, gamma=0.0, eps=0.0).item() == pytest.approx(0.440190, abs=1e-6)  # plain CE
    assert scr_loss(z, m, eps=0.0).item() == pytest.approx(0.055815, abs=1e-6)  # plain focal
    # the missing column stays in the softmax: masking it out instead changes the loss
    assert scr_loss(torch.tensor([[3.0, 1.0, -1e9, 2.0]]), m).item() != pytest.approx(0.074218, abs=1e-4)


def test_rows_without_a_negative_drop_out():
    z = torch.tensor([[3.0, 1.0, 0.0, 2.0], [5.0, 0.0, 0.0, 0.0]])
    m = torch.tensor([[True, False, True], [False, False, False]])
    assert scr_loss(z, m).item() == pytest.approx(0.074218, abs=1e-6)


def test_local_score_by_hand():
    patches = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # [B=1, P=2, d=2]
    tokens = torch.tensor([[[[0.5, 0.5], [1.0, 0.2], [0.2, 1.0], [0.0, 0.0]]]])  # SOT, a, eot, PAD
    mask = torch.tensor([[[False, True, True, False]]])
    cos = local_cosines(patches, tokens)
    # min-max weights put token a on patch 1 and eot on patch 2: cosines 1/sqrt(1.04)
    assert cos[0, 0, 1].item() == pytest.approx(1 / math.sqrt(1.04), abs=1e-6)
    assert cos[0, 0, 2].item() == pytest.approx(1 / math.sqrt(1.04), abs=1e-6)
    s = local_scores(cos, mask, torch.tensor(100.0))
    assert s.item() == pytest.approx(98.7512, abs=1e-3)
    # a token whose products are all equal: finite (the code's 0/0 gives NaN)
    flat = local_cosines(patches, torch.tensor([[[[1.0, 1.0]]]]))
    assert torch.isfinite(flat).all()


def test_bigram_shuffle_and_the_three_slots():
    rng = np.random.default_rng(0)
    out = bigram_shuffle("a red cube left of a blue ball.", rng)
    assert out.endswith(".") and out != "a red cube left of a blue ball."
    assert sorted(out[:-1].split()) == sorted("a red cube left of a blue ball".split())
    assert bigram_shuffle("cube", rng) is None  # one word: nothing to shuffle
    swap, replace, shuffle = fsc_negatives("a small dog chasing a large cat", None, rng)
    assert all(x is not None for x in (swap, replace, shuffle))
    world = {"swap_adjectives": ["A"], "swap_nouns": [], "replace_adjectives": [], "replace_nouns": ["B"]}
    assert fsc_negatives("one two three four", world, rng)[:2] == ["A", "B"]


def _tiny():
    from unbag import models
    return models.load("builtin").model


def test_lora_patches_both_towers_and_only_its_factors_train():
    m = _tiny()
    counts = lora.apply(m)
    names = [n for n, p in m.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert any(n.startswith("visual.") for n in names) and any(n.startswith("transformer.") for n in names)
    assert any("in_proj_weight" in n for n in names) and any("conv" in n or "stem" in n for n in names)
    assert not m.logit_scale.requires_grad and counts["lora/trainable"] == sum(p.numel() for p in m.parameters()
                                                                               if p.requires_grad)


@pytest.mark.parametrize("zero", [True, False])
def test_lora_starts_at_the_pretrained_model_only_with_zero_attention_factors(zero):
    from unbag import models
    b = models.load("builtin")
    ids = b.tokenize(["a red cube", "two blue balls"])
    before = b.encode_texts(ids).embeds.detach()
    lora.apply(b.model, zero_init_attn=zero)
    after = b.encode_texts(ids).embeds.detach()
    assert torch.allclose(before, after, atol=1e-6) == zero
    lora.merge(b.model)  # folded into plain weights: the same function, no parametrization left
    assert torch.allclose(b.encode_texts(ids).embeds.detach(), after, atol=1e-5)
    assert not any("parametrizations" in k for k in b.model.state_dict())


def _cfg(**kw):
    return TrainConfig.for_method("fsc-clip", **({"model": "builtin", "data": "world@flat", "steps": 6,
                                                 "batch_size": 8, "lr": 1e-3, "warmup": 1, "workers": 0,
                                                 "log_every": 1, "ckpt_every": 3, "seed": 3} | kw))


def test_fsc_clip_trains_with_lora_and_exports_a_plain_model(tmp_path):
    from unbag import models
    cfg = _cfg(steps=3)
    assert TrainConfig.for_method("fsc-clip").lr == 5e-5 and cfg.options["lora_rank"] == 4
    Trainer(cfg, tmp_path).fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert all(math.isfinite(r[k]) for r in log for k in ("loss", "neg_global", "neg_local"))
    assert len({r["logit_scale"] for r in log}) == 1  # frozen under LoRA
    trained, base = models.load(str(tmp_path / "model")).model.state_dict(), models.load("builtin").model.state_dict()
    assert set(trained) == set(base)  # merged: loads as the model it started from
    assert any(not torch.equal(trained[k], base[k]) for k in base if base[k].is_floating_point())


def test_fsc_clip_full_fine_tuning(tmp_path):
    Trainer(_cfg(steps=2, lora_rank=0, lr=5e-6), tmp_path).fit(progress=False)
    assert json.loads((tmp_path / "config.json").read_text())["parameters"].get("image/trainable", 0) > 0


@pytest.mark.slow
def test_fsc_clip_resumes_exactly(tmp_path, resumed):
    a, b = resumed(_cfg)
    assert [r["loss"] for r in a] == [r["loss"] for r in b]
    assert (tmp_path / "full" / "model" / "open_clip_model.safetensors").read_bytes() == \
        (tmp_path / "cut" / "model" / "open_clip_model.safetensors").read_bytes()
