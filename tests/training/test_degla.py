import json
import math

import pytest
import torch
import torch.nn.functional as F

from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.degla import degla_loss


def _rand(*shape, seed=0):
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), dim=-1)


def _spec(v, t, tn, tv, tt, ttn, s, tau=0.1, base="batch"):
    """DeGLA's loss as its paper writes it (arXiv 2504.16801), element by element."""
    B, K, _ = tn.shape
    e = torch.exp
    i2t = 0
    for i in range(B):
        cols = [s * v[i] @ t[j] for j in range(B)]
        cols += [s * v[i] @ tn[j, k] for j in range(B) for k in range(K)] if base == "batch" else \
            [s * v[i] @ tn[i, k] for k in range(K)]
        i2t += -torch.log(e(cols[i]) / sum(e(c) for c in cols))
    t2i = sum(-torch.log(e(s * t[i] @ v[i]) / sum(e(s * t[i] @ v[j]) for j in range(B))) for i in range(B))
    base_l = (i2t / B + t2i / B) / 2
    igc = sum(-torch.log(e(s * v[i] @ t[i]) / (e(s * v[i] @ t[i]) + sum(e(s * v[i] @ tn[i, k]) for k in range(K))))
              for i in range(B)) / B
    tgc = sum(-torch.log(e(t[i] @ tt[i] / tau) / (e(t[i] @ tt[i] / tau) + sum(e(t[i] @ tn[i, k] / tau) for k in range(K))))
              for i in range(B)) / B
    distill = sum(((v[i] - tv[i]) ** 2).sum() + ((t[i] - tt[i]) ** 2).sum()
                  + sum(((tn[i, k] - ttn[i, k]) ** 2).sum() for k in range(K)) for i in range(B))
    return base_l + 0.1 * igc + 0.1 * tgc + 0.005 * distill, dict(base=base_l, igc=igc, tgc=tgc, distill=distill)


def _feats(B=4, K=3, d=8):
    return (_rand(B, d, seed=1), _rand(B, d, seed=2), _rand(B, K, d, seed=3), _rand(B, d, seed=4),
            _rand(B, d, seed=5), _rand(B, K, d, seed=6))


@pytest.mark.parametrize("base", ["batch", "own"])
def test_degla_loss_equals_the_equations(base):
    f, s = _feats(), torch.tensor(9.0)
    loss, parts = degla_loss(*f, s, base=base)
    want, wparts = _spec(*f, s, base=base)
    for k in wparts:
        assert parts[k].item() == pytest.approx(wparts[k].item(), rel=1e-5), k
    assert loss.item() == pytest.approx(want.item(), rel=1e-5)


def test_tgc_uses_each_captions_own_negatives_not_the_released_codes_mask():
    # B=2, K=2: the released code builds the negatives' mask with mask_0.repeat(1, K), which on a
    # sample-major layout [n_00, n_01, n_10, n_11] keeps columns (n_00, n_10) for caption 0:
    # another sample's negative. Make that negative very close to caption 0 so the two differ.
    d = 4
    t = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]])
    tt = t.clone()
    tn = torch.tensor([[[0, 0, 1.0, 0], [0, 0, 0, 1.0]],
                       [[0.99, 0.1, 0, 0], [0, 0, 1.0, 0]]])
    tn = F.normalize(tn, dim=-1)
    v, tv = t.clone(), t.clone()
    _, parts = degla_loss(v, t, tn, tv, tt, tn.clone(), torch.tensor(1.0))
    tau = 0.1
    own0 = -torch.log(torch.exp(t[0] @ tt[0] / tau) / (torch.exp(t[0] @ tt[0] / tau)
                                                       + sum(torch.exp(t[0] @ tn[0, k] / tau) for k in range(2))))
    own1 = -torch.log(torch.exp(t[1] @ tt[1] / tau) / (torch.exp(t[1] @ tt[1] / tau)
                                                       + sum(torch.exp(t[1] @ tn[1, k] / tau) for k in range(2))))
    assert parts["tgc"].item() == pytest.approx(((own0 + own1) / 2).item(), rel=1e-4, abs=1e-7)
    # the released code's mask, transcribed: columns [teacher texts | negatives flattened sample-major]
    flat = tn.reshape(4, d)
    logits = torch.cat([t @ tt.T, t @ flat.T], 1) / tau
    mask0 = torch.full((2, 2), float("-inf"))
    mask0.fill_diagonal_(0)
    code = F.cross_entropy(logits + torch.cat([mask0, mask0.repeat(1, 2)], 1), torch.arange(2))
    assert code.item() > 1000 * parts["tgc"].item()  # the bug changes the loss, visibly


def test_masked_negatives_leave_every_term():
    f, s = _feats(B=3, K=2), torch.tensor(5.0)
    v, t, tn, tv, tt, ttn = f
    valid = torch.tensor([[True, True], [True, False], [True, True]])
    loss, parts = degla_loss(v, t, tn, tv, tt, ttn, s, valid)
    moved = tn.clone()
    moved[1, 1] = -moved[1, 1]  # an invalid negative may be anything
    loss2, _ = degla_loss(v, t, moved, tv, tt, ttn, s, valid)
    assert loss.item() == pytest.approx(loss2.item(), rel=1e-6)


def test_degla_trains_with_an_ema_teacher(tmp_path):
    cfg = TrainConfig.for_method("degla", model="builtin", steps=3, batch_size=8, lr=1e-4, warmup=1,
                                 workers=0, log_every=1, ckpt_every=100)
    assert cfg.ema == 0.9996 and cfg.typed_negatives == 4
    tr = Trainer(cfg, tmp_path)
    tr.fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert log[0]["distill"] < 1e-6 < log[-1]["distill"]  # the teacher starts equal, then lags
    assert all(math.isfinite(r["tgc"]) and math.isfinite(r["igc"]) for r in log)
    teacher = tr.ema.model.state_dict()
    assert all(not p.requires_grad for p in tr.ema.model.parameters())
    assert any(not torch.equal(teacher[k], v) for k, v in tr.model.state_dict().items() if v.is_floating_point())
