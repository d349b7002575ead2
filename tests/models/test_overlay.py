import json

import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.shipping import save_overlay


def test_overlay_keeps_only_changed_tensors_and_loads_back(tmp_path):
    b = models.load("builtin")
    with torch.no_grad():
        b.model.text_projection.add_(0.01)
        b.model.logit_scale.add_(0.1)
    b.save(tmp_path / "tuned")
    out = save_overlay(str(tmp_path / "tuned"), "builtin", tmp_path / "ov", {"method": "test"})
    info = json.loads((out / "overlay.json").read_text())
    assert info["tensors"] == 2 and info["base"] == "builtin" and info["method"] == "test"
    back = models.load(str(out))
    want = b.model.state_dict()
    for k, v in back.model.state_dict().items():
        assert torch.allclose(v, want[k], atol=2e-3, rtol=1e-3), k
    assert back.spec == str(out)


def test_unknown_shipped_checkpoint_is_named():
    with pytest.raises(UnbagError, match="no shipped checkpoint 'dpo'"):
        models.load("builtin:dpo")


def test_a_mostly_rescaled_matrix_is_stored_sparse_and_rebuilt_bit_for_bit():
    from unbag.models.overlay import pack, unpack

    g = torch.Generator().manual_seed(0)
    base = {"emb": torch.randn(5000, 16, generator=g) * 0.05, "proj": torch.randn(16, 16, generator=g)}
    tuned = {"emb": base["emb"] * 0.997, "proj": base["proj"] + 0.01}
    tuned["emb"][[3, 70, 4999]] += 0.02  # the rows training really moved
    tuned["emb"] += torch.randn(5000, 16, generator=g) * 1e-7  # fp32 drift, as AdamW leaves it
    state = pack(tuned, base)
    assert set(state) == {"proj", "emb::scale", "emb::rows", "emb::row_values", "emb::fix_index", "emb::fix_values"}
    assert state["emb::rows"].tolist() == [3, 70, 4999]
    assert sum(t.numel() * t.element_size() for k, t in state.items() if k.startswith("emb")) < 5000 * 16 * 2 / 5
    back = unpack(state, base)
    for k in tuned:
        assert torch.equal(back[k], tuned[k].half()), k  # exactly the dense fp16 overlay


@pytest.mark.parametrize("method", ["pretrained", "ft", "negclip", "clic", "degla"])
def test_shipped_heads_record_the_weights_shipped_beside_them(method):
    """Each shipped head names the SHA-1 of the model it reads (heads refuse any other); that the
    scores are those of the dense checkpoints the heads were trained on is test_shipped_scores.py."""
    from unbag.heads.shipped import HEADS_DIR
    from unbag.models.base import weights_id

    recorded = {json.loads((HEADS_DIR / kind / method / "head.json").read_text())["backbone_id"]
                for kind in ("tflocal", "tfglobal", "tfregions")}
    assert recorded == {weights_id(models.load("builtin" if method == "pretrained" else f"builtin:{method}"))}


def test_a_model_trained_from_scratch_is_stored_as_its_trained_rows_and_a_seed():
    from unbag.models.overlay import pack_builtin, seeded_normal, unpack

    g = torch.Generator().manual_seed(0)
    init = {"emb": torch.randn(3000, 8, generator=g) * 0.02, "proj": torch.randn(8, 8, generator=g)}
    trained = {"emb": init["emb"] * 0.78, "proj": init["proj"] * 2}
    trained["emb"][[5, 900]] += 0.1
    state = pack_builtin(trained, init, seed=3)
    assert state["emb::rows"].tolist() == [5, 900] and "emb" not in state
    assert torch.equal(state["proj"], trained["proj"]) and state["proj"].dtype == torch.float32
    assert state["emb::scale"].item() == pytest.approx(0.78, rel=1e-6)
    back = unpack(state, {k: torch.empty_like(v) for k, v in init.items()})  # only shapes are read
    assert torch.equal(back["emb"][[5, 900]], trained["emb"][[5, 900]])  # trained rows: exact fp32
    redrawn = seeded_normal((3000, 8), 3, float(state["emb::std"])) * state["emb::scale"]
    rest = torch.ones(3000, dtype=torch.bool)
    rest[[5, 900]] = False
    assert torch.equal(back["emb"][rest], redrawn[rest])
    assert not torch.allclose(back["emb"][rest], trained["emb"][rest])  # new random rows, same scale
    assert back["emb"][rest].std().item() == pytest.approx(trained["emb"][rest].std().item(), rel=0.05)


@pytest.mark.slow
def test_the_builtin_stores_every_token_the_world_captions_read():
    """Only the untrained token rows are redrawn at load: every token of a pretraining or ctrl
    caption of the world the model was trained on (up to its end token; later positions are
    masked out) is a stored row."""
    import json

    from safetensors.torch import load_file

    from unbag.world import stream, stream3d
    from unbag.world.styles import world

    stored = set(load_file(str(models.BUILTIN_WEIGHTS))["token_embedding.weight::rows"].tolist())
    m = models.load("builtin")
    config = json.loads((models.BUILTIN_WEIGHTS.parent / "open_clip_config.json").read_text())["unbag"]["config"]
    style = (config.get("options") or {}).get("vocabulary", "flat")  # runs before the 3D world: flat
    # the captions of 10 SWAP items a category and split, and of 100 training samples: every word of
    # the world's vocabulary (a few dozen) many times over; drawn small, as only their words count
    swap = world(style).part("swap")
    captions = [c for split in swap.SPLITS for cat in swap.CATEGORIES for i in range(10)
                for c in swap.build_item(0, split, cat, i, px=32).captions]
    source = stream3d if style == "3d" else stream
    captions += [source.sample(0, i, 32, "pretraining").caption for i in range(100)]  # 16 px: 8x the placing
    tokens = m.tokenize(captions)
    eot = tokens.argmax(-1)  # open_clip's end token has the largest id
    read = {int(t) for row, end in zip(tokens, eot) for t in row[:end + 1]}
    # the world's few dozen words are stored; the rest of the 49,408 rows are redrawn
    assert read <= stored and len(stored) < 100, (sorted(read - stored), len(stored))


def test_the_builtin_resized_to_another_image_size_keeps_every_tensor_but_its_position_grid(tmp_path):
    from unbag.models import BUILTIN_DIR
    from unbag.shipping import resize_builtin

    before = models.load("builtin")
    px = before.image_size[0]
    g = before.encode_images(torch.rand(1, 3, px, px), tokens=True).grid[0]
    big, G = px * 3 // 2, g * 3 // 2  # read at 1.5 times its size
    after = models.load(str(resize_builtin(BUILTIN_DIR, big, tmp_path / "big")))
    assert after.image_size == (big, big)
    a, b = before.model.state_dict(), after.model.state_dict()
    assert [k for k in a if not torch.equal(a[k], b[k])] == ["visual.positional_embedding"]
    old, new = a["visual.positional_embedding"], b["visual.positional_embedding"]
    assert new.shape == (1 + G * G, old.shape[1]) and torch.equal(new[0], old[0])  # the class token's row kept
    # a g x g grid read at 1.5 g x 1.5 g: each corner cell lies 1/3 of a cell inside the old corner
    # cell's centre, so it stays close to it (bicubic), far closer than the grid's cells are to each other
    grid_old, grid_new = old[1:].reshape(g, g, -1), new[1:].reshape(G, G, -1)
    spread = (grid_old - grid_old.mean((0, 1))).norm(dim=-1).mean()
    assert (grid_new[0, 0] - grid_old[0, 0]).norm() < 0.5 * spread
    assert after.encode_images(torch.rand(2, 3, big, big), tokens=True).grid == (G, G)
    # at its own size it is the same model, and what it was resized from is recorded
    same = models.load(str(resize_builtin(BUILTIN_DIR, px, tmp_path / "same")))
    assert all(torch.equal(v, same.model.state_dict()[k]) for k, v in a.items())
    record = json.loads((tmp_path / "big" / "open_clip_config.json").read_text())["unbag"]["resized_from"]
    assert record["image_size"] == px
