"""Training a transformers model: checkpoints, resume and the exported folder (tiny CLIP and SigLIP)."""
import json

import pytest
import torch

from unbag import models
from unbag.training.engine import TrainConfig, Trainer

pytest.importorskip("transformers")


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_hf_model_checkpoints_resumes_and_exports(kind, tmp_path, build_hf, interrupted):
    src = build_hf(kind, tmp_path / "src")
    cfg = TrainConfig(model=f"hf:{src}", steps=4, batch_size=8, lr=1e-3, warmup=1, workers=0, ckpt_every=2,
                      log_every=1, seed=1)
    full = Trainer(cfg, tmp_path / "full")
    full.fit(progress=False)

    cut = tmp_path / "cut"
    interrupted(cfg, cut, 3)  # dies in step 3: the checkpoint of step 2 survives
    mid = models.load(str(cut / "ckpt"))  # a checkpoint is a loadable transformers folder
    assert mid.kind == kind and json.loads((cut / "ckpt" / "train_config.json").read_text())["steps"] == 4
    Trainer(cfg, cut).fit(resume=True, progress=False)

    a, b = (cut / "model" / "model.safetensors").read_bytes(), (tmp_path / "full" / "model" / "model.safetensors").read_bytes()
    assert a == b  # the resumed run ends exactly where the uninterrupted one does
    back = models.load(str(tmp_path / "full" / "model"))
    assert type(back).__name__ == "HFBackend" and back.kind == kind
    assert json.loads((tmp_path / "full" / "model" / "unbag.json").read_text())["config"]["steps"] == 4
    trained, before = full.backend.model.state_dict(), models.load(f"hf:{src}").model.state_dict()
    assert any(not torch.equal(trained[k], before[k]) for k in before)  # training changed the weights
    ids = back.tokenize(["a red cube", "two blue spheres"])
    px = torch.stack([back.preprocess(im) for im in _images()])
    with torch.no_grad():
        assert torch.equal(back.encode_texts(ids).embeds, full.backend.encode_texts(ids).embeds)
        assert torch.equal(back.encode_images(px).embeds, full.backend.encode_images(px).embeds)
    assert back.image_size == full.backend.image_size and back.mean == full.backend.mean


def _images():
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)) for _ in range(2)]
