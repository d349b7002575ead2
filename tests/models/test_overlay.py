import json

import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.models.overlay import save_overlay


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


@pytest.mark.parametrize("method", ["ft", "negclip", "clic", "degla"])
def test_shipped_overlays_rebuild_the_weights_their_heads_were_trained_on(method):
    """The heads shipped for each fine-tuned copy record the SHA-1 of the weights they were trained
    on (the dense fp16 overlays shipped before); the sparse overlays rebuild exactly those weights,
    so every score is unchanged, item by item."""
    from unbag.heads.shipped import HEADS_DIR
    from unbag.models.base import weights_id

    recorded = {json.loads((HEADS_DIR / kind / method / "head.json").read_text())["backbone_id"]
                for kind in ("tflocal", "tfglobal", "tfregions")}
    assert recorded == {weights_id(models.load(f"builtin:{method}"))}
