import copy

import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.models import stem, token_pool
from unbag.models.openclip import _open_clip

SPEC = "open_clip:unbag-tiny-poolmax@random"


def _by_hand(visual, x: torch.Tensor) -> torch.Tensor:
    """The ViT's steps written out: patches + CLS + positions, blocks, ln_post, max over patches, proj."""
    h = visual.ln_post(visual.transformer(visual._embeds(x)))
    return h[:, 1:].amax(1) @ visual.proj


def test_the_image_embedding_is_the_maximum_of_the_patch_tokens():
    torch.manual_seed(0)
    b = models.load(SPEC)
    x = torch.randn(3, 3, *b.image_size)
    with torch.no_grad():
        feats = b.encode_images(x, tokens=True)
        want = _by_hand(b.model.visual, x)
        assert torch.allclose(b.encode_images(x).embeds, want, atol=1e-6)
        assert torch.allclose(feats.embeds, want, atol=1e-6)
        # the patch tokens (what the heads and SGI read) are open_clip's as ever
        v = b.model.visual
        assert torch.allclose(feats.patches, v.ln_post(v.transformer(v._embeds(x)))[:, 1:] @ v.proj, atol=1e-6)
        # every patch kept: SGI's token subsets give the same embedding
        keep = [(0, torch.arange(64))]
        assert torch.allclose(b.encode_patch_subsets(x[:1], keep), want[:1], atol=1e-5)


def test_the_config_key_changes_the_pooling_only():
    oc = _open_clip()
    cfg = oc.get_model_config("unbag-tiny-poolmax")
    assert cfg[token_pool.KEY] == "max" and cfg[stem.KEY] == "pool"
    torch.manual_seed(0)
    tok = stem.build(oc, {k: v for k, v in cfg.items() if k != token_pool.KEY})
    mx = stem.build(oc, cfg)
    assert {k: v.shape for k, v in tok.state_dict().items()} == {k: v.shape for k, v in mx.state_dict().items()}
    mx.load_state_dict(tok.state_dict())
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert not torch.allclose(tok.visual(x), mx.visual(x))
        assert torch.equal(mx.visual(x), _by_hand(mx.visual, x))
        assert torch.equal(copy.deepcopy(mx).visual(x), mx.visual(x))  # an EMA teacher's copy pools alike
    with pytest.raises(UnbagError, match="unbag_pool 'mean'"):
        stem.build(oc, {**cfg, token_pool.KEY: "mean"})


def test_a_trained_max_pool_model_round_trips_as_a_folder(tmp_path):
    torch.manual_seed(0)
    b = models.load(SPEC)
    b.save(tmp_path / "model")
    again = models.load(str(tmp_path / "model"))
    x = torch.randn(2, 3, *b.image_size)
    with torch.no_grad():
        assert torch.equal(again.encode_images(x).embeds, b.encode_images(x).embeds)
        assert torch.equal(again.encode_images(x).embeds, _by_hand(again.model.visual, x))
