import json

import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.training import freeze
from unbag.training.data import batches
from unbag.training.ema import EMA
from unbag.training.engine import TrainConfig, Trainer, micro_batch


def _trainable(model):
    return {n for n, p in model.named_parameters() if p.requires_grad}


def test_freeze_policies():
    m = models.load("open_clip:unbag-tiny@random").model
    names = {n for n, _ in m.named_parameters()}
    freeze.apply(m, lock_image=True)
    assert _trainable(m) == {n for n in names if not n.startswith("visual.")}
    freeze.apply(m, lock_text=True)
    assert _trainable(m) == {n for n in names if n.startswith("visual.") or n == "logit_scale"}
    freeze.apply(m, lock_image=True, unlock_last=1)
    vis = {n for n in _trainable(m) if n.startswith("visual.")}
    last = max(int(n.split("resblocks.")[1].split(".")[0]) for n in names if n.startswith("visual.transformer."))
    assert vis and all(f"resblocks.{last}." in n or n in ("visual.proj", "visual.ln_post.weight", "visual.ln_post.bias")
                       for n in vis)
    assert "visual.conv1.weight" not in vis and f"visual.transformer.resblocks.{last - 1}.ln_1.weight" not in vis
    counts = freeze.apply(m)
    assert "image/frozen" not in counts and counts["image/trainable"] > 0


def test_ema_update_is_the_formula():
    lin = torch.nn.Linear(3, 2)
    ema = EMA(lin, 0.9)
    w0 = ema.model.weight.clone()
    with torch.no_grad():
        lin.weight.add_(1.0)
    ema.update(lin)
    assert torch.allclose(ema.model.weight, 0.9 * w0 + 0.1 * lin.weight)
    assert not any(p.requires_grad for p in ema.model.parameters())


def test_ema_teacher_trains_resumes_and_exports(tmp_path):
    cfg = TrainConfig(steps=3, batch_size=8, workers=0, ema=0.5, ckpt_every=2, log_every=1, warmup=1)
    tr = Trainer(cfg, tmp_path)
    tr.fit(progress=False)
    assert (tmp_path / "ckpt" / "ema.safetensors").is_file() and (tmp_path / "model_ema").is_dir()
    ema = models.load(str(tmp_path / "model_ema")).model.state_dict()
    student = tr.model.state_dict()
    assert any(not torch.equal(ema[k], student[k]) for k in student if student[k].is_floating_point())


def test_micro_batches_split_samples_and_their_negatives():
    raw = next(batches("world", 0, 8, 64, 0, 1, workers=0, twins=True, negatives=True))
    parts = [micro_batch(raw, i, 2) for i in range(2)]
    assert parts[0]["captions"] + parts[1]["captions"] == raw["captions"]
    assert parts[0]["neg_captions"] + parts[1]["neg_captions"] == raw["neg_captions"]
    for p in parts:
        assert len(p["twin_images"]) == len(p["twin_of"]) == len(p["twin_captions"])
        assert all(0 <= j < 4 for j in p["twin_of"].tolist())
    clic = next(batches("world", 0, 4, 64, 0, 1, workers=0, mode="concat"))
    half = micro_batch(clic, 1, 2)
    assert half["texts"] == [clic["texts"][b * 4 + j] for b in range(5) for j in (2, 3)]


def test_accumulation_and_bf16_run(tmp_path):
    cfg = TrainConfig(steps=2, batch_size=8, workers=0, accum=2, precision="bf16", log_every=1, warmup=1)
    Trainer(cfg, tmp_path).fit(progress=False)
    log = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert len(log) == 2 and all(r["loss"] == r["loss"] for r in log)
    with pytest.raises(UnbagError, match="micro-batches"):
        Trainer(TrainConfig(batch_size=9, accum=2), tmp_path / "x")


def test_method_defaults_come_from_the_spec():
    ft = TrainConfig.for_method("ft")
    assert (ft.lr, ft.batch_size, ft.warmup, ft.eps, ft.weight_decay) == (1e-6, 400, 50, 1e-6, 0.1)
    clic = TrainConfig.for_method("clic", lr=1e-4)
    assert clic.lr == 1e-4 and clic.lock_image and clic.min_lr == 1e-8
    with pytest.raises(UnbagError, match="unknown method"):
        TrainConfig.for_method("dpo")
