import math

import pytest
import torch
import torch.nn.functional as F

from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.ft import ft_loss
from unbag.training.objectives.negclip import negclip_loss


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_negclip_hand_computed():
    # one image, its caption (cos 1) and its negative (cos 0), scale 1
    img = torch.tensor([[1.0, 0.0]])
    txt = torch.tensor([[1.0, 0.0]])
    neg = torch.tensor([[0.0, 1.0]])
    i2t = -math.log(math.e / (math.e + 1))  # softmax over [1, 0]
    t2i = 0.0  # a single column
    assert negclip_loss(img, txt, neg, torch.tensor(1.0)).item() == pytest.approx((i2t + t2i) / 2, abs=1e-6)


def test_negclip_equals_the_papers_formula():
    img, txt, neg = _rand(5, 8, seed=1), _rand(5, 8, seed=2), _rand(3, 8, seed=3)
    s = torch.tensor(10.0)
    u, t, n = (F.normalize(x, dim=-1) for x in (img, txt, neg))
    # written out per row: image i against all positives and all negatives; text i against images
    i2t = sum(-torch.log(torch.exp(s * u[i] @ t[i]) / (torch.exp(s * u[i] @ t.T).sum() + torch.exp(s * u[i] @ n.T).sum()))
              for i in range(5)) / 5
    t2i = sum(-torch.log(torch.exp(s * t[i] @ u[i]) / torch.exp(s * t[i] @ u.T).sum()) for i in range(5)) / 5
    assert negclip_loss(img, txt, neg, s).item() == pytest.approx(((i2t + t2i) / 2).item(), rel=1e-5)


def test_ft_appends_negative_pairs():
    img, txt = _rand(4, 8, seed=4), _rand(4, 8, seed=5)
    nimg, ntxt = _rand(2, 8, seed=6), _rand(2, 8, seed=7)
    s = torch.tensor(5.0)
    u = F.normalize(torch.cat([img, nimg]), dim=-1)
    t = F.normalize(torch.cat([txt, ntxt]), dim=-1)
    logits = s * u @ t.T  # 6 x 6: negatives are extra pairs
    want = (F.cross_entropy(logits, torch.arange(6)) + F.cross_entropy(logits.T, torch.arange(6))) / 2
    assert ft_loss(img, txt, nimg, ntxt, s).item() == pytest.approx(want.item(), rel=1e-6)
    assert ft_loss(img, txt, None, None, s).item() != pytest.approx(want.item())


@pytest.mark.parametrize("method", ["ft", "negclip"])
def test_methods_train_with_twin_negatives(method, tmp_path):
    import json

    cfg = TrainConfig(method=method, steps=3, batch_size=16, workers=0, log_every=1, warmup=1, lr=1e-3)
    Trainer(cfg, tmp_path).fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(log) == 3 and all(r["negatives"] > 0 for r in log)
    assert all(math.isfinite(r["loss"]) for r in log)
