import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.models import stem
from unbag.models.openclip import _open_clip
from unbag.models.overlay import save_builtin

SPEC = "open_clip:unbag-tiny-conv@random"


@pytest.mark.parametrize("patch", [2, 4, 8, 16])
def test_conv_stem_keeps_the_patch_grid(patch):
    out = stem.conv_stem(64, patch)(torch.randn(2, 3, 64, 64))
    assert out.shape == (2, 64, 64 // patch, 64 // patch)


def test_conv_stem_refuses_a_patch_it_cannot_reach():
    with pytest.raises(UnbagError, match="power of 2"):
        stem.conv_stem(64, 14)


def test_the_config_key_replaces_the_patch_embedding_only():
    oc = _open_clip()
    cfg = oc.get_model_config("unbag-tiny-conv")
    plain = stem.build(oc, {k: v for k, v in cfg.items() if k != stem.KEY})
    conv = stem.build(oc, cfg)
    assert isinstance(plain.visual.conv1, torch.nn.Conv2d) and isinstance(conv.visual.conv1, torch.nn.Sequential)
    same = {k: v.shape for k, v in plain.state_dict().items() if not k.startswith("visual.conv1")}
    assert same == {k: v.shape for k, v in conv.state_dict().items() if not k.startswith("visual.conv1")}
    with pytest.raises(UnbagError, match="unbag_stem 'deep'"):
        stem.build(oc, {**cfg, stem.KEY: "deep"})


def test_an_image_embedding_does_not_depend_on_its_batch():
    torch.manual_seed(0)
    b = models.load(SPEC)
    x = torch.randn(4, 3, *b.image_size)
    with torch.no_grad():
        assert torch.allclose(b.encode_images(x).embeds[:1], b.encode_images(x[:1]).embeds, atol=1e-5)


def test_a_trained_stem_model_round_trips_as_a_folder_and_packed(tmp_path):
    """A run's model/ folder (open_clip local-dir) and the built-in packing both rebuild the stem."""
    torch.manual_seed(0)
    b = models.load(SPEC)
    with torch.no_grad():
        for p in b.model.visual.conv1.parameters():
            p.add_(0.01)  # weights that a fresh build would not draw
    b.save(tmp_path / "run" / "model")
    x = torch.randn(2, 3, *b.image_size)
    again = models.load(str(tmp_path / "run" / "model"))
    packed = models.load(str(save_builtin(tmp_path / "run", SPEC, 0, tmp_path / "packed")))
    with torch.no_grad():
        want = b.encode_images(x).embeds
        assert torch.equal(again.encode_images(x).embeds, want)
        assert torch.allclose(packed.encode_images(x).embeds, want, atol=1e-6)


def test_export_says_plain_open_clip_cannot_build_the_stem(tmp_path, capsys):
    from unbag.cli import main
    torch.manual_seed(0)
    models.load(SPEC).save(tmp_path / "m")
    assert main(["export", str(tmp_path / "m"), "--out", str(tmp_path / "oc")]) in (0, None)
    assert "cannot build its convolutional stem" in capsys.readouterr().out
    assert isinstance(models.load(str(tmp_path / "oc")).model.visual.conv1, torch.nn.Sequential)
