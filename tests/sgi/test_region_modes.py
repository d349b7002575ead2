"""SGI's `tokens` region mode: each region encoded from only the patch tokens it covers."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from unbag import models
from unbag.benchmarks.ctrl import generated
from unbag.cache import JobCache
from unbag.sgi.config import SGIConfig
from unbag.sgi.encode import encode_regions
from unbag.sgi.protocol import score_sgi
from unbag.sgi.regions import frame_regions, patch_cover


def test_patch_cover_by_hand():
    # 64 px picture, 8 x 8 patches of 8 px
    assert patch_cover(((0, 0, 16, 16),), 64, 8).tolist() == [0, 1, 8, 9]
    assert patch_cover(((0, 0, 12, 8),), 64, 8).tolist() == [0, 1]  # patch 1 is half covered: kept
    assert patch_cover(((0, 0, 11, 8),), 64, 8).tolist() == [0]  # 3/8 of patch 1: dropped
    assert patch_cover(((60, 60, 64, 64),), 64, 8).tolist() == [63]  # a quarter only: the best cell
    assert patch_cover(((0, 0, 8, 8), (56, 0, 64, 8)), 64, 8).tolist() == [0, 7]  # a union of two boxes
    # 96 px over 3 x 3 patches of 32 px
    assert patch_cover(((32, 32, 96, 96),), 96, 3).tolist() == [4, 5, 7, 8]


@pytest.fixture(scope="module")
def builtin():
    return models.load("builtin")


@pytest.fixture(scope="module")
def bench():
    return generated(seed=5, per_category=1)  # the built-in model's world, at its size


def test_token_mode_encodes_each_region_from_its_patches(builtin, bench):
    """Batched over images and flushes, each region's embedding is the encoder run on its own
    patches; checked region by region against a direct call."""
    cfg = SGIConfig(mode="tokens")
    got = encode_regions(builtin, bench, cfg, batch_size=7, cache=JobCache())  # several flushes
    refs = [r for it in bench.items for r in it.images]
    grid = builtin.image_size[0] // builtin.patch_px()
    for ref, regs in zip(refs, got):
        arr, regions = frame_regions(np.asarray(ref), cfg.region_cfg, cfg.frame)
        assert regions == regs.regions
        px = builtin.normalize_pixels(torch.from_numpy(np.ascontiguousarray(arr)[None]))
        with torch.inference_mode():
            want = torch.cat([builtin.encode_patch_subsets(px, [(0, torch.from_numpy(patch_cover(r, arr.shape[0], grid)))])
                              for r in regions])
        torch.testing.assert_close(regs.emb, F.normalize(want, dim=-1), atol=1e-5, rtol=1e-4)


def test_token_mode_is_recorded_and_scores_differently_from_masks(builtin, bench):
    tok = score_sgi(builtin, bench, cfg=SGIConfig(mode="tokens"), cache=JobCache())
    mask = score_sgi(builtin, bench, cfg=SGIConfig(phases=1), cache=JobCache())
    assert tok.shape == mask.shape and not torch.allclose(tok, mask)
    assert SGIConfig(mode="tokens").record()["mode"] == "tokens"


def test_an_encoder_without_patch_subsets_masks_instead(builtin, bench, monkeypatch):
    monkeypatch.setattr(type(builtin), "encode_patch_subsets", lambda self, px, keep: None)
    with pytest.warns(UserWarning, match="cannot encode a subset of patch tokens"):
        tok = encode_regions(builtin, bench, SGIConfig(mode="tokens", phases=1), cache=JobCache())
    mask = encode_regions(builtin, bench, SGIConfig(mode="mask", phases=1), cache=JobCache())
    for a, b in zip(tok, mask):
        assert torch.equal(a.emb, b.emb)
