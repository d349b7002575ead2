import numpy as np
import torch
from PIL import Image

from unbag import models
from unbag.scoring import encode


def test_dataloader_workers_give_the_same_embeddings(tmp_path, monkeypatch):
    refs = []
    for k in range(7):
        p = tmp_path / f"{k}.png"
        Image.fromarray(np.random.default_rng(k).integers(0, 255, (50, 70, 3), dtype=np.uint8)).save(p)
        refs.append(str(p))
    b = models.load("builtin")
    monkeypatch.setattr(encode, "WORKERS", 0)
    plain = encode.encode_images(b, refs + refs[:2], batch_size=3)
    monkeypatch.setattr(encode, "WORKERS", 2)
    loaded = encode.encode_images(b, refs + refs[:2], batch_size=3)  # 3 batches through 2 workers
    assert torch.allclose(plain, loaded, atol=1e-6)
    assert torch.equal(loaded[7], loaded[0])  # duplicates encoded once, mapped back
