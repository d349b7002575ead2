"""Encoding a region from only its patch tokens (SGI's `tokens` mode), on every ViT backend."""
import numpy as np
import pytest
import torch

from unbag import models


@pytest.fixture(scope="module", params=["open_clip:unbag-tiny@random", "open_clip:unbag-tiny-conv@random",
                                        "open_clip:unbag-tiny-poolmax@random", "builtin",
                                        "hf-clip", "hf-siglip"])
def backend(request, tmp_path_factory, build_hf):
    spec = request.param
    if spec.startswith("hf-"):
        pytest.importorskip("transformers")
        kind = spec[3:]
        spec = f"hf:{build_hf(kind, tmp_path_factory.mktemp(kind), image_size=32, patch=8)}"
    torch.manual_seed(0)
    return models.load(spec)


def _pixels(b, n=2):
    h, w = b.image_size
    rng = np.random.default_rng(0)
    return b.normalize_pixels(torch.from_numpy(rng.integers(0, 255, (n, h, w, 3), dtype=np.uint8)))


@torch.inference_mode()
def test_keeping_every_patch_gives_the_global_embedding(backend):
    px = _pixels(backend)
    n = (backend.image_size[0] // backend.patch_px()) ** 2
    got = backend.encode_patch_subsets(px, [(0, torch.arange(n)), (1, torch.arange(n))])
    torch.testing.assert_close(got, backend.encode_images(px).embeds, atol=1e-5, rtol=1e-4)


@torch.inference_mode()
def test_each_region_is_encoded_as_if_alone(backend):
    px = _pixels(backend)
    keep = [(0, torch.tensor([0, 1, 5])), (1, torch.tensor([2])), (1, torch.tensor([3, 4, 9])),
            (0, torch.tensor([7, 8]))]
    together = backend.encode_patch_subsets(px, keep)
    alone = torch.cat([backend.encode_patch_subsets(px, [k]) for k in keep])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(together[0], together[3], atol=1e-3)  # different patches, different embeddings


@torch.inference_mode()
def test_a_subset_equals_the_full_sequence_with_the_other_patches_masked_out():
    """An independent computation on open_clip: the whole sequence through the blocks with an
    attention mask that hides the dropped patches gives the same CLS output."""
    torch.manual_seed(0)
    b = models.load("open_clip:unbag-tiny@random")
    v = b.model.visual
    px = _pixels(b, 1)
    kept = torch.tensor([3, 4, 11, 12, 20])
    x = v._embeds(px)
    mask = torch.full((x.shape[1], x.shape[1]), float("-inf"))
    cols = torch.cat([torch.tensor([0]), kept + 1])
    mask[:, cols] = 0  # every position may attend to the CLS token and the kept patches only
    want = v.ln_post(v.transformer(x, attn_mask=mask)[:, 0]) @ v.proj
    torch.testing.assert_close(b.encode_patch_subsets(px, [(0, kept)]), want, atol=1e-5, rtol=1e-4)
