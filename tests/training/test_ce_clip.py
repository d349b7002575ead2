"""CE-CLIP's losses (arXiv 2306.08832) against hand-computed cases, its negatives, and its training."""
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.ce_clip import ce_negatives, cmr_loss, imc_loss, itc_hn, next_theta


def test_cmr_and_its_threshold_update_by_hand():
    p = torch.tensor([30.0, 28.0])
    n = torch.tensor([[29.0, 25, 31, 20], [27, 26, 22, 29]])
    m = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]], dtype=torch.bool)
    theta = torch.full((4,), 2.0)
    # ReLU(theta + n m - p) m = [[0, 0, 3, 0], [1, 0, 0, 3]]: 7 over all 8 cells
    assert cmr_loss(p, n, m, theta).item() == pytest.approx(0.875)
    # 29 - the mean of each column's valid logits [27, 25.5, 26.5, 24.5]
    assert next_theta(p, n, m, theta).tolist() == [2.0, 3.5, 2.5, 4.5]
    assert next_theta(p, n, m, theta, upper=3.0).tolist() == [2.0, 3.0, 2.5, 3.0]
    assert next_theta(p, n, m, theta, kind="fixed", fixed=5.0).tolist() == [5.0] * 4


def test_a_type_with_no_valid_negative_keeps_its_threshold():
    p, n = torch.tensor([30.0, 28.0]), torch.tensor([[29.0, 25], [27, 26]])
    m = torch.tensor([[0, 1], [0, 1]], dtype=torch.bool)
    new = next_theta(p, n, m, torch.tensor([1.5, 0.0]))
    assert new.tolist() == [1.5, 29 - 25.5] and torch.isfinite(new).all()


def test_imc_forms_by_hand():
    # one row: p = 30 against text-negative logits [95, 90, 85, 80]
    tt = torch.tensor([[95.0, 90, 85, 80]])
    assert imc_loss(torch.tensor([30.0]), tt).item() == pytest.approx(65.00676, abs=1e-4)
    # two rows over a pool of 8: the released form's target is column 0, sample 0's first negative
    tt = torch.tensor([[95.0, 90, 85, 80, 60, 55, 50, 45], [58, 52, 50, 47, 94, 91, 86, 81]])
    rows = F.cross_entropy(tt, torch.zeros(2, dtype=torch.long), reduction="none")
    assert rows.tolist() == pytest.approx([0.00676, 36.04891], abs=1e-4)
    assert imc_loss(torch.tensor([30.0, 29.0]), tt, "released").item() == pytest.approx(18.02783, abs=1e-4)
    assert imc_loss(torch.tensor([30.0, 29.0]), tt).item() == pytest.approx((65.00676 + 65.04891) / 2, abs=1e-4)
    # the 2023 form targets column 1 of [p, tt]: the first negative of sample 0 again
    v1 = imc_loss(torch.tensor([30.0, 29.0]), tt, "released_v1")
    want = F.cross_entropy(torch.cat([torch.tensor([[30.0], [29.0]]), tt], 1), torch.ones(2, dtype=torch.long))
    assert v1.item() == pytest.approx(want.item())


def test_itc_with_every_negative_of_the_batch_and_invalid_ones_kept():
    g = torch.Generator().manual_seed(0)
    v, t = (F.normalize(torch.randn(3, 5, generator=g), dim=-1) for _ in range(2))
    tn = F.normalize(torch.randn(3, 4, 5, generator=g), dim=-1)
    valid = torch.tensor([[1, 0, 1, 1], [1, 1, 1, 1], [0, 0, 1, 1]], dtype=torch.bool)
    s = 7.0
    e = math.exp
    i2t = t2i = masked = 0.0
    for i in range(3):
        pos = e(s * float(v[i] @ t[i]))
        cols = [e(s * float(v[i] @ t[j])) for j in range(3)]
        negs = [(e(s * float(v[i] @ tn[j, k])), bool(valid[j, k])) for j in range(3) for k in range(4)]
        i2t += -math.log(pos / (sum(cols) + sum(x for x, _ in negs)))
        masked += -math.log(pos / (sum(cols) + sum(x for x, ok in negs if ok)))
        t2i += -math.log(e(s * float(t[i] @ v[i])) / sum(e(s * float(t[i] @ v[j])) for j in range(3)))
    assert itc_hn(v, t, tn, torch.tensor(s)).item() == pytest.approx((i2t + t2i) / 6, rel=1e-5)
    assert itc_hn(v, t, tn, torch.tensor(s), valid).item() == pytest.approx((masked + t2i) / 6, rel=1e-5)


def test_negatives_of_free_text_in_their_four_slots():
    rng = np.random.default_rng(0)
    rel, att, obj, act = ce_negatives("a man riding a horse on a beach", None, rng)
    assert rel == "a horse riding a man on a beach"
    assert obj is not None and obj != "a man riding a horse on a beach"
    assert act is not None and "riding" not in act and att is None  # no adjective
    # two nouns only: no relation negative (the code writes '###' and marks it invalid)
    assert ce_negatives("a dog running on the grass", None, rng)[0] is None
    # whole words: 'man' inside 'woman' is left alone (the code's substring edit is not reproduced)
    rel = ce_negatives("a woman and a man with a dog", None, rng)[0]
    assert rel == "a man and a woman with a dog"


def test_a_worlds_captions_get_its_exact_edits_and_no_action():
    world = {"swap_nouns": ["x"], "replace_adjectives": ["y"], "replace_nouns": ["z"]}
    assert ce_negatives("whatever", world, np.random.default_rng(0)) == ["x", "y", "z", None]
    assert ce_negatives("whatever", {"swap_nouns": [], "replace_adjectives": [], "replace_nouns": []},
                        np.random.default_rng(0)) == [None] * 4


def _cfg(**kw):
    return TrainConfig.for_method("ce-clip", **({"model": "builtin", "data": "world@flat", "steps": 6,
                                                "batch_size": 8, "lr": 1e-4, "warmup": 1, "workers": 0,
                                                "log_every": 1, "ckpt_every": 3, "seed": 3} | kw))


def test_ce_clip_trains_on_the_world_and_records_its_thresholds(tmp_path):
    cfg = _cfg(steps=3)
    assert (cfg.lr, cfg.options["imc_form"], cfg.options["lambda_cmr"]) == (1e-4, "itc_anchor", 0.2)
    assert TrainConfig.for_method("ce-clip").lr == 5e-6
    Trainer(cfg, tmp_path).fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["cmr"]) for r in log)
    assert all(0 <= r[f"theta_{k}"] <= 10 for r in log for k in ("relation", "attribute", "object"))
    assert any(r["theta_attribute"] > 0 for r in log) and all(r["theta_action"] == 0 for r in log)  # no verbs
    assert (tmp_path / "model" / "open_clip_model.safetensors").is_file()


@pytest.mark.slow
def test_ce_clip_resumes_exactly_with_its_thresholds(resumed):
    a, b = resumed(_cfg)
    assert [r["loss"] for r in a] == [r["loss"] for r in b]
    assert [r["theta_object"] for r in a] == [r["theta_object"] for r in b]
