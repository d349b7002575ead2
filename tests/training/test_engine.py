import json

import pytest
import torch

from unbag.errors import UnbagError
from unbag.training.engine import TrainConfig, Trainer
from unbag.training.objectives import OBJECTIVES
from unbag.training.optim import lr_lambda, param_groups


def _cfg(**kw):
    # the flat world's stream: these test the engine, and it draws a sample in a fraction of a millisecond
    base = dict(steps=8, batch_size=12, lr=2e-3, warmup=2, workers=0, ckpt_every=3, log_every=1, seed=5,
                data="world@flat")
    return TrainConfig(**(base | kw))


def _losses(out):
    return [json.loads(x)["loss"] for x in (out / "log.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_resume_continues_exactly(tmp_path, interrupted):
    full = tmp_path / "full"
    Trainer(_cfg(), full).fit(progress=False)

    # interrupt the second run in its 6th step: the checkpoint of step 3 is all that survives
    cut = tmp_path / "cut"
    interrupted(_cfg(), cut, 6)
    assert not (cut / "model").exists()  # nothing exported half-way
    with pytest.raises(UnbagError, match="--resume"):
        Trainer(_cfg(), cut).fit(progress=False)
    Trainer(_cfg(), cut).fit(resume=True, progress=False)

    a, b = _losses(full), _losses(cut)
    assert len(a) == len(b) == 8
    assert a == b  # bit-identical on CPU
    sa = (full / "model" / "open_clip_model.safetensors").read_bytes()
    assert sa == (cut / "model" / "open_clip_model.safetensors").read_bytes()


def test_resume_refuses_a_different_config(tmp_path):
    Trainer(_cfg(steps=3), tmp_path).fit(progress=False)
    with pytest.raises(UnbagError, match="different config.*lr"):
        Trainer(_cfg(steps=3, lr=1e-2), tmp_path).fit(resume=True, progress=False)


def test_a_checkpoint_of_an_older_layout_is_refused_by_name(tmp_path):
    Trainer(_cfg(steps=3), tmp_path).fit(progress=False)
    (tmp_path / "ckpt" / "train_config.json").rename(tmp_path / "ckpt" / "config.json")
    with pytest.raises(UnbagError, match="older unbag"):
        Trainer(_cfg(steps=3), tmp_path).fit(resume=True, progress=False)


def test_threads_hold_for_the_training_only(tmp_path, monkeypatch):
    """cfg.threads is torch's thread count while training; the caller's count is back afterwards
    (a test that trained on one thread used to leave the whole test session on one)."""
    seen, step = [], Trainer._train_step

    def spy(self, raw):
        seen.append(torch.get_num_threads())
        return step(self, raw)

    monkeypatch.setattr(Trainer, "_train_step", spy)
    before = torch.get_num_threads()
    want = 1 if before != 1 else 2
    Trainer(_cfg(steps=2, threads=want), tmp_path).fit(progress=False)
    assert seen == [want, want] and torch.get_num_threads() == before


@pytest.mark.slow
def test_training_lowers_the_loss(tmp_path):
    Trainer(_cfg(steps=30, batch_size=24, ckpt_every=100), tmp_path).fit(progress=False)
    losses = _losses(tmp_path)
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.3


def test_no_weight_decay_on_norms_biases_and_logit_scale():
    m = torch.nn.Module()
    m.proj = torch.nn.Linear(4, 4)
    m.ln_final = torch.nn.LayerNorm(4)
    m.logit_scale = torch.nn.Parameter(torch.ones([]))
    decay, no_decay = param_groups(m, 0.1)
    assert decay["params"] == [m.proj.weight] and decay["weight_decay"] == 0.1
    assert {id(p) for p in no_decay["params"]} == {id(m.proj.bias), id(m.ln_final.weight),
                                                    id(m.ln_final.bias), id(m.logit_scale)}
    assert no_decay["weight_decay"] == 0.0


def test_schedule_warms_up_then_decays_to_min():
    f = lr_lambda(TrainConfig(steps=100, warmup=10, lr=1.0, min_lr=0.1))
    assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0)
    assert f(10) == pytest.approx(1.0) and f(55) == pytest.approx(0.55) and f(100) == pytest.approx(0.1)


def test_resume_accepts_a_checkpoint_from_before_a_new_option(tmp_path):
    # a run begun by an older unbag has no entry for an option added since: it had the default
    Trainer(_cfg(steps=3), tmp_path).fit(progress=False)
    saved = json.loads((tmp_path / "ckpt" / "train_config.json").read_text())
    del saved["select"]
    (tmp_path / "ckpt" / "train_config.json").write_text(json.dumps(saved))
    Trainer(_cfg(steps=3), tmp_path).fit(resume=True, progress=False)
    with pytest.raises(UnbagError, match="select"):
        Trainer(_cfg(steps=3, select="ctrl-id:1"), tmp_path).fit(resume=True, progress=False)


@pytest.mark.parametrize("method", sorted(OBJECTIVES))
def test_every_objective_declares_what_its_batches_hold(method):
    from unbag.training.data import batches
    from unbag.training.objectives import Needs, Objective

    obj = OBJECTIVES[method]
    assert issubclass(obj, Objective) and isinstance(obj.needs, Needs) and obj.name == method and obj.defaults
    n = obj.needs
    it = batches("world", 0, 6, 64, 0, 2, 0, twins=n.twins, negatives=n.negatives,
                 mode="concat" if n.concat else "pairs", typed=4 if n.typed else 0, objects=n.objects)
    keys = set().union(*(set(next(it)) for _ in range(2)))  # CLIC alternates its two kinds of step
    assert ("twin_captions" in keys) == n.twins and ("neg_captions" in keys) == n.negatives
    assert ("typed_captions" in keys) == n.typed and ("texts" in keys) == n.concat
    assert ("object_images" in keys) == n.objects


def test_patch_dropout_drops_tokens_in_training_only(tmp_path):
    """FLIP's patch dropout (arXiv 2212.00794): in training mode a share of each image's patch
    tokens is dropped; the exported model reads every patch; a bad share is refused."""
    from unbag import models

    torch.manual_seed(0)
    b = models.load("open_clip:unbag-tiny@random")
    b.set_patch_dropout(0.5)
    x = torch.randn(2, 3, 64, 64)
    b.model.train()
    with torch.no_grad():
        assert b.encode_images(x, tokens=True).patches.shape[1] == 32  # of 64 patches
        b.model.eval()
        assert b.encode_images(x, tokens=True).patches.shape[1] == 64
    tr = Trainer(_cfg(model="open_clip:unbag-tiny@random", data="world", steps=2, patch_dropout=0.5), tmp_path)
    assert tr.model.visual.patch_dropout.prob == 0.5
    out = tr.fit(progress=False)
    assert models.load(str(out)).encode_images(x, tokens=True).patches.shape[1] == 64
    with pytest.raises(UnbagError, match="--patch-dropout 1.0"):
        _cfg(patch_dropout=1.0)
