import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unbag.training.data import TrainBatches, WorldSource, clic_texts
from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives.clic import clic_loss


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_clic_loss_hand_computed():
    # one image; positives all equal to it (cos 1), negative orthogonal (cos 0); scale 1
    u = torch.tensor([[1.0, 0.0]])
    texts = torch.tensor([[[1.0, 0.0]]] * 4 + [[[0.0, 1.0]]])
    loss, parts = clic_loss(u, texts, torch.tensor(1.0))
    assert parts["cont"].item() == pytest.approx(0.0, abs=1e-6)  # one column, one row
    assert parts["sneg"].item() == pytest.approx(-math.log(math.e / (math.e + 1)), abs=1e-6)
    assert parts["uni"].item() == pytest.approx(0.0, abs=1e-6)
    assert loss.item() == pytest.approx(0.5 * parts["sneg"].item(), abs=1e-6)


def test_clic_loss_equals_the_papers_formulas():
    B, d, s = 5, 8, torch.tensor(7.0)
    u = F.normalize(_rand(B, d, seed=1), dim=-1)
    t = F.normalize(_rand(5, B, d, seed=2), dim=-1)
    p, n = t[:4], t[4]
    # written out per element, straight from the formulas of arXiv 2505.24424 and its released code
    i2t = sum(-torch.log(torch.exp(s * u[i] @ p[k, i]) / torch.exp(s * u[i] @ p[k].T).sum())
              for k in range(4) for i in range(B)) / (4 * B)
    t2i = sum(-torch.log(torch.exp(s * p[k, i] @ u[i]) / torch.exp(s * p[k, i] @ u.T).sum())
              for k in range(4) for i in range(B)) / (4 * B)
    sneg = sum(-torch.log(torch.exp(s * u[i] @ p[k, i]) / (torch.exp(s * u[i] @ p[k, i]) + torch.exp(s * u[i] @ n[i])))
               for k in range(4) for i in range(B)) / (4 * B)
    uni = sum(((p[0, i] - p[1, i]) ** 2).sum() for i in range(B)) / B
    want = 0.5 * (i2t + t2i) / 2 + 0.5 * sneg + 1.0 * uni
    loss, parts = clic_loss(_rand(B, d, seed=1) * 3, _rand(5, B, d, seed=2) * 2, s)  # unnormalised in
    assert parts["uni"].item() == pytest.approx(uni.item(), rel=1e-5)
    assert parts["sneg"].item() == pytest.approx(sneg.item(), rel=1e-5)
    assert loss.item() == pytest.approx(want.item(), rel=1e-5)


def test_clic_texts_on_world_pairs():
    src = WorldSource(0, 64)
    rng = np.random.default_rng(0)
    a, b = src.record(3, extra=2), src.partner(3, rng, 2)
    pos, neg = clic_texts(a, b, rng)
    c1, c2 = a.captions[0].rstrip("."), b.captions[0].rstrip(".")
    assert pos[0] == f"{c1}. {c2}." and pos[1] == f"{c2}. {c1}."
    for p in pos[2:]:  # one further sentence of each image, in random order
        sents = {x.strip() for x in p.rstrip(".").split(". ")}
        assert len(sents & {s.rstrip(".") for s in a.captions[1:]}) >= 1
        assert len(sents & {s.rstrip(".") for s in b.captions[1:]}) >= 1
    assert neg not in pos[:2] or c1.split()[-1] == c2.split()[-1]


def test_clic_batches_alternate_and_concatenate():
    ds = TrainBatches("world", 0, 6, 64, 0, 2, mode="concat")
    hard, plain = list(ds)
    assert hard["mode"] == "concat" and plain["mode"] == "pairs"
    assert hard["images"].shape == (6, 64, 64, 3) and len(hard["texts"]) == 5 * 6
    assert plain["images"].shape == (6, 64, 64, 3) and len(plain["captions"]) == 6
    # world images are square ("wider" in CLIC's rule): two half-height scenes stacked
    top, bottom = hard["images"][0, :32], hard["images"][0, 32:]
    assert not torch.equal(top, bottom)


@pytest.mark.slow
def test_clic_trains_only_the_text_side(tmp_path):
    cfg = TrainConfig.for_method("clic", model="builtin", steps=4, batch_size=8, lr=1e-4, workers=0,
                                 log_every=1, ckpt_every=100)
    assert cfg.lock_image and cfg.warmup_steps == 1 and cfg.eps == 1e-8
    tr = Trainer(cfg, tmp_path)
    before = {k: v.clone() for k, v in tr.model.state_dict().items()}
    tr.fit(progress=False)
    after = tr.model.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and not any(k.startswith("visual.") for k in changed)
    assert any(k.startswith("transformer.") for k in changed)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["clic_step"] for r in log] == [1.0, 0.0, 1.0, 0.0]
    assert all(k in log[0] for k in ("cont", "sneg", "uni"))
