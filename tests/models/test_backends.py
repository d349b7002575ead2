import numpy as np
import pytest
import torch
from PIL import Image

from unbag import models
from unbag.errors import UnbagError

SPECS = ["open_clip:unbag-tiny@random", "open_clip:unbag-tiny-conv@random", "open_clip:unbag-tiny-poolmax@random"] + (
    ["builtin"] if models.BUILTIN_WEIGHTS.exists() else [])


@pytest.fixture(scope="module", params=SPECS)
def backend(request):
    torch.manual_seed(0)
    return models.load(request.param)


def test_interface_shapes(backend):
    h, w = backend.image_size
    px = torch.randn(3, 3, h, w)
    f = backend.encode_images(px, tokens=True)
    d = f.embeds.shape[1]
    rows, cols = f.grid
    assert f.embeds.shape == (3, d) and f.patches.shape == (3, rows * cols, d)
    ids = backend.tokenize(["a red cube", "two large blue metal spheres and one small cone"])
    t = backend.encode_texts(ids, tokens=True)
    assert t.embeds.shape == (2, d) and t.tokens.shape == (2, ids.shape[1], d)
    # mask: start token .. end token; the longer caption has more real tokens
    assert t.mask.dtype == torch.bool and t.mask[:, 0].all() and t.mask[1].sum() > t.mask[0].sum()
    assert float(backend.logit_scale.detach()) <= 100


def test_token_features_agree_with_pooled_outputs(backend):
    h, w = backend.image_size
    with torch.no_grad():
        ids = backend.tokenize(["a small green rubber star", "a cube"])
        t = backend.encode_texts(ids, tokens=True)
        end = t.mask.sum(1) - 1  # the end-of-text token carries the pooled embedding
        assert torch.allclose(t.tokens[torch.arange(2), end], backend.model.encode_text(ids), atol=1e-5)
        assert torch.allclose(t.embeds, backend.encode_texts(ids).embeds, atol=1e-6)
        px = torch.randn(2, 3, h, w)
        assert torch.allclose(backend.encode_images(px, tokens=True).embeds, backend.model.encode_image(px), atol=1e-6)


def test_fast_pixel_path_equals_preprocess(backend):
    h, w = backend.image_size
    arr = np.random.default_rng(0).integers(0, 256, (2, h, w, 3), dtype=np.uint8)
    fast = backend.normalize_pixels(torch.from_numpy(arr))
    slow = torch.stack([backend.preprocess(Image.fromarray(a)) for a in arr])
    assert torch.allclose(fast, slow, atol=1e-5)


def test_unknown_spec_is_a_clear_error(tmp_path):
    with pytest.raises(UnbagError, match="unknown model spec 'nope'.*known forms"):
        models.load("nope")
    with pytest.raises(UnbagError, match="no model config 'ViT-X'"):
        models.load("open_clip:ViT-X@random")
    with pytest.raises(UnbagError, match="not a model directory"):
        models.load(str(tmp_path))


def test_openai_weights_get_quickgelu():
    from unbag.models.openclip import _open_clip, _quickgelu_name

    oc = _open_clip()
    assert _quickgelu_name(oc, "ViT-B-32", "openai") == "ViT-B-32-quickgelu"
    assert _quickgelu_name(oc, "ViT-B-32", "laion2b_s34b_b79k") == "ViT-B-32"
    with pytest.raises(UnbagError, match="QuickGELU"):
        _quickgelu_name(oc, "unbag-tiny", "openai")


def test_saved_model_round_trips(tmp_path, backend):
    backend.save(tmp_path / "m")
    again = models.load(str(tmp_path / "m"))
    ids = backend.tokenize(["a red cube"])
    with torch.no_grad():
        assert torch.equal(again.encode_texts(ids).embeds, backend.encode_texts(ids).embeds)


def test_patch_px_from_the_token_grid(backend, monkeypatch):
    feats = backend.encode_images(torch.zeros(1, 3, *backend.image_size), tokens=True)
    assert backend.patch_px() == backend.image_size[1] // feats.grid[1]
    # an encoder without patch tokens (a ResNet tower) has no patch size, and SGI uses one view
    monkeypatch.delattr(backend, "_patch_px")
    monkeypatch.setattr(backend, "encode_images", lambda x, tokens=False: (_ for _ in ()).throw(TypeError("no tokens")))
    assert backend.patch_px() is None


# a tiny spec for every registered kind of model spec (a kind registered without one fails below)
TINY = {"builtin": lambda build_hf, d: "builtin", "open_clip": lambda build_hf, d: "open_clip:unbag-tiny@random",
        "hf": lambda build_hf, d: f"hf:{build_hf('siglip', d)}"}


def test_every_registered_model_form_has_a_tiny_spec():
    assert set(TINY) == set(models.MODELS)


@pytest.mark.parametrize("prefix", list(models.MODELS))
def test_every_registered_model_form_loads_and_scores(prefix, build_hf, tmp_path):
    import unbag

    spec = TINY[prefix](build_hf, tmp_path / "hf")
    b = models.load(spec)
    assert b.spec == spec and isinstance(b, models.Backend)
    img = np.zeros((64, 64, 3), np.uint8)
    img[20:40, 20:40] = (200, 30, 30)
    for protocol in ("global", "sgi"):
        s = unbag.score(b, [img, img[:, ::-1].copy()], ["a red cube", "a blue sphere left of a red cube"], protocol)
        assert s.shape == (2, 2) and torch.isfinite(s).all()


def test_image_tower_id(backend, image_tower_check):
    image_tower_check(backend)


def test_tokenize_memo_gives_the_tokenizers_ids(backend):
    texts = ["a red cube", "two blue spheres left of a cone", "a red cube"]
    first, again = backend.tokenize(texts[:2]), backend.tokenize(texts + ["a cone"])
    assert torch.equal(first, backend.tokenizer(texts[:2]))
    assert torch.equal(again, backend.tokenizer(texts + ["a cone"]))


def test_memo_tokenize_counts_and_limit():
    from unbag.models.base import memo_tokenize

    calls = []

    def tok(texts):
        calls.append(list(texts))
        return torch.tensor([[len(t), 0] for t in texts])
    memo: dict = {}
    assert memo_tokenize(memo, ["ab", "abc", "ab"], tok).tolist() == [[2, 0], [3, 0], [2, 0]]
    memo_tokenize(memo, ["abc", "abcd"], tok, limit=3)
    assert calls == [["ab", "abc"], ["abcd"]]  # each distinct text tokenised once
    memo_tokenize(memo, ["x"], tok, limit=3)  # over the limit: the memo starts again
    assert calls[-1] == ["x"] and set(memo) == {"x"}



def test_cpu_chunks_give_the_whole_batchs_features(backend, cpu_chunks_check):
    cpu_chunks_check(backend)
