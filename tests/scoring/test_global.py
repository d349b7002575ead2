import numpy as np
import torch

from unbag import models
from unbag.benchmarks.base import Benchmark, Item
from unbag.scoring import encode
from unbag.scoring.cosine import score_global


class Counting:
    """Wraps a backend and counts what reaches the encoders."""

    def __init__(self, backend):
        self.b, self.images, self.texts = backend, 0, 0

    def __getattr__(self, name):
        return getattr(self.b, name)

    def encode_images(self, px, tokens=False):
        self.images += len(px)
        return self.b.encode_images(px, tokens)

    def encode_texts(self, ids, tokens=False):
        self.texts += len(ids)
        return self.b.encode_texts(ids, tokens)


def test_each_distinct_image_and_caption_is_encoded_once():
    torch.manual_seed(0)
    b = Counting(models.load("open_clip:unbag-tiny@random"))
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (64, 64, 3), dtype=np.uint8) for _ in range(3)]
    items = [Item("a", [imgs[0], imgs[1]], ["x", "y"], {}), Item("b", [imgs[1], imgs[2]], ["y", "z"], {}),
             Item("c", [imgs[0].copy(), imgs[2]], ["x", "z"], {})]
    s = score_global(b, Benchmark("t", "t", items), batch_size=2)
    assert b.images == 3 and b.texts == 3
    assert s.shape == (3, 2, 2)
    # the same (image, caption) pair scores the same wherever it occurs
    assert s[0, 0, 0] == s[2, 0, 0] and s[0, 1, 1] == s[1, 0, 0]
    # and equals the plain cosine of the model's outputs
    with torch.no_grad():
        u = torch.nn.functional.normalize(b.b.encode_images(b.normalize_pixels(torch.from_numpy(imgs[0][None]))).embeds, dim=-1)
        t = torch.nn.functional.normalize(b.b.encode_texts(b.tokenize(["y"])).embeds, dim=-1)
    assert torch.isclose(s[0, 0, 1], (u * t).sum(), atol=1e-5)


def test_unique():
    assert encode.unique(["a", "b", "a", "c", "b"]) == ([0, 1, 3], [0, 1, 0, 2, 1])
