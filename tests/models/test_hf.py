import numpy as np
import pytest
import torch
from PIL import Image

from unbag import models
from unbag.errors import UnbagError

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module", params=["clip", "siglip"])
def hf(request, tmp_path_factory, build_hf):
    d = build_hf(request.param, tmp_path_factory.mktemp(request.param))
    return request.param, models.load(f"hf:{d}")


def _pixels(b, n=2):
    rng = np.random.default_rng(0)
    imgs = [Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)) for _ in range(n)]
    return torch.stack([b.preprocess(i) for i in imgs])


def test_global_embeddings_equal_the_models_own_features(hf):
    kind, b = hf
    px = _pixels(b)
    ids = b.tokenize(["a red cube", "two blue spheres left of a cone"])
    with torch.no_grad():
        img = b.encode_images(px).embeds
        want = b.model.get_image_features(pixel_values=px)
        want = getattr(want, "pooler_output", want)
        assert torch.allclose(img, want, atol=1e-5)
        txt = b.encode_texts(ids).embeds
        attn = (ids != b.tokenizer.pad_token_id).long() if kind == "clip" else None
        if kind == "clip":  # CLIP pads with its end token: the first one is real
            attn = b._mask(ids).long()
        want = b.model.get_text_features(input_ids=ids, attention_mask=attn)
        want = getattr(want, "pooler_output", want)
        assert torch.allclose(txt, want, atol=1e-5)


def test_tokens_agree_with_the_pooled_embeddings(hf):
    kind, b = hf
    ids = b.tokenize(["a red cube", "one small green metal star"])
    with torch.no_grad():
        f = b.encode_texts(ids, tokens=True)
        pos = (ids == 3).int().argmax(-1) if kind == "clip" else torch.full((2,), ids.shape[1] - 1)
        assert torch.allclose(f.tokens[torch.arange(2), pos], f.embeds, atol=1e-5)
        assert f.mask.shape == ids.shape and f.mask[:, 0].all()
        im = b.encode_images(_pixels(b), tokens=True)
        assert im.patches.shape == (2, 16, im.embeds.shape[-1]) and im.grid == (4, 4)


def test_siglip_patch_approximation_is_exact_for_one_patch(tmp_path, build_hf):
    # with a single patch the attention pooling is one-hot: the approximation must equal the pooled output
    b = models.load(f"hf:{build_hf('siglip', tmp_path / 's1', image_size=8, patch=8)}")
    with torch.no_grad():
        f = b.encode_images(_pixels(b), tokens=True)
    assert torch.allclose(f.patches[:, 0], f.embeds, atol=1e-5)


def test_preprocess_matches_the_fast_pixel_path(hf):
    _, b = hf
    arr = np.random.default_rng(1).integers(0, 255, (32, 32, 3), dtype=np.uint8)
    a = b.preprocess(Image.fromarray(arr))
    fast = b.normalize_pixels(torch.from_numpy(arr)[None])[0]
    assert torch.allclose(a, fast, atol=1e-6)


def test_missing_hf_model_says_what_to_download(tmp_path):
    with pytest.raises(UnbagError, match="cannot find the model.*hf:DIR"):
        models.load(f"hf:{tmp_path / 'nope'}")


def test_image_tower_id(hf, image_tower_check):
    image_tower_check(hf[1])


def test_cpu_chunks_give_the_whole_batchs_features(hf, cpu_chunks_check):
    cpu_chunks_check(hf[1])
