import json

import pytest
from safetensors.torch import load_file

from unbag.errors import UnbagError
from unbag.training import select
from unbag.training.engine import TrainConfig, Trainer


@pytest.mark.slow
@pytest.mark.parametrize("world", ["flat", "3d"])
def test_validation_split_is_in_distribution_and_not_the_test(world):
    from unbag.benchmarks.ctrl import generated
    px = 32 if world == "flat" else 64
    bench = select.validation_set(f"ctrl-id@{world}:2", px)
    assert len(bench.items) == 2 * 5 and bench.image_size == px and bench.info["style"] == world
    assert select.parse(f"ctrl-id@{world}") == (world, select.DEFAULT_PER_CATEGORY)
    assert all(it.group["split"] == "id" and not it.meta["held_out"] for it in bench.items)
    test = generated(seed=0, per_category=2, px=px, style=world)
    assert not {tuple(it.captions) + tuple(map(str, it.images)) for it in test.items} & \
        {tuple(it.captions) + tuple(map(str, it.images)) for it in bench.items}


@pytest.mark.parametrize("spec", ["ctrl", "ctrl-id:x", "ctrl-id:0", "coco", "ctrl-id@3d:0", "ctrl-id@cube", "ctrl3d-id"])
def test_bad_select_spec_is_a_clear_error(spec):
    with pytest.raises(UnbagError, match="--select"):
        select.parse(spec)


@pytest.mark.slow
def test_the_best_validated_checkpoint_is_exported(tmp_path, monkeypatch):
    scripted = iter([0.2, 0.5, 0.5, 0.3])  # steps 2, 4, 6, 8: the first 0.5 (step 4) wins
    seen = []

    def fake(backend, bench):
        seen.append(len(bench.items))
        return next(scripted)

    monkeypatch.setattr(select, "validate", fake)
    cfg = TrainConfig(steps=8, batch_size=8, lr=2e-3, warmup=2, workers=0, ckpt_every=2, log_every=1,
                      seed=5, select="ctrl-id:1")
    out = tmp_path / "run"
    Trainer(cfg, out).fit(progress=False)
    assert seen == [5] * 4
    best = json.loads((out / "best" / "best.json").read_text())
    assert best["step"] == 4 and best["val"] == 0.5
    val = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if "val_group" in x]
    assert [v["val_group"] for v in val] == [0.2, 0.5, 0.5, 0.3]
    assert [v["best_step"] for v in val] == [1, 3, 3, 3]
    exported = load_file(str(out / "model" / "open_clip_model.safetensors"))
    at_best = load_file(str(out / "best" / "model.safetensors"))
    last = load_file(str(out / "ckpt" / "open_clip_model.safetensors"))
    assert all((exported[k] == at_best[k]).all() for k in at_best)
    assert any((exported[k] != last[k]).any() for k in last)
    meta = json.loads((out / "model" / "open_clip_config.json").read_text())
    assert meta["unbag"]["selected"]["step"] == 4


def test_validate_is_the_mean_group_score_of_global_cosine():
    from unbag import models
    from unbag.evaluation import evaluate
    from unbag.scoring.cosine import score_global
    m = models.load("builtin")
    bench = select.validation_set("ctrl-id:4", m.image_size[0])
    m.model.train()
    score = select.validate(m, bench)
    assert m.model.training  # the trainer's mode is given back
    m.model.eval()
    s = score_global(m, bench)  # [items, images, captions]; strict >, by hand
    group = (s[:, 0, 0] > s[:, 0, 1]) & (s[:, 1, 1] > s[:, 1, 0]) & (s[:, 0, 0] > s[:, 1, 0]) & (s[:, 1, 1] > s[:, 0, 1])
    assert score == pytest.approx(float(group.float().mean()))
    assert score == pytest.approx(evaluate(m, bench, "global", progress=False)["metrics"]["all/all/group"])
