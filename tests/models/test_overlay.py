import json

import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.models.openclip import save_local_dir
from unbag.models.overlay import save_overlay


def test_overlay_keeps_only_changed_tensors_and_loads_back(tmp_path):
    b = models.load("builtin")
    with torch.no_grad():
        b.model.text_projection.add_(0.01)
        b.model.logit_scale.add_(0.1)
    save_local_dir(b, tmp_path / "tuned")
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
