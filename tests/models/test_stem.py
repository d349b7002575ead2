import pytest
import torch

from unbag import models
from unbag.errors import UnbagError
from unbag.models import stem
from unbag.models.openclip import _open_clip
from unbag.shipping import save_builtin

SPECS = [f"open_clip:unbag-tiny-{kind}@random" for kind in stem.STEMS]


@pytest.mark.parametrize("kind", list(stem.STEMS))
@pytest.mark.parametrize("patch", [2, 4, 8, 16])
def test_a_stem_keeps_the_patch_grid(kind, patch):
    out = stem.STEMS[kind](64, patch)(torch.randn(2, 3, 64, 64))
    assert out.shape == (2, 64, 64 // patch, 64 // patch)


@pytest.mark.parametrize("kind", list(stem.STEMS))
def test_a_stem_refuses_a_patch_it_cannot_reach(kind):
    with pytest.raises(UnbagError, match="power of 2"):
        stem.STEMS[kind](64, 14)


def test_the_pool_stem_looks_at_full_resolution_before_each_halving():
    layers = list(stem.pool_stem(64, 8))
    convs = [m for m in layers if isinstance(m, torch.nn.Conv2d)]
    assert [c.stride for c in convs[:3]] == [(1, 1)] * 3 and [c.out_channels for c in convs] == [16, 32, 64, 64]
    assert sum(isinstance(m, stem.MaxPool2x2) for m in layers) == 3


@pytest.mark.parametrize("side", [(8, 8), (6, 10), (7, 9)])
def test_the_pool_stems_max_pool_is_torchs_bit_for_bit(side):
    x = torch.randn(2, 3, *side, dtype=torch.float64, requires_grad=True)
    x.data[0, 0, :2, :2] = 1.0  # a tie inside one window
    ours, theirs = stem.MaxPool2x2()(x), torch.nn.MaxPool2d(2)(x)
    assert ours.shape == theirs.shape and torch.equal(ours, theirs)
    ours.sum().backward()
    assert x.grad.sum() == ours.numel()  # each window passes its gradient on once


def test_the_pool_stem_is_conv_norm_relu_pool_bit_for_bit():
    torch.manual_seed(0)
    net = stem.pool_stem(64, 8)
    with torch.no_grad():  # a norm that flips some channels: ReLU must still commute with the pool
        for m in net:
            if isinstance(m, torch.nn.GroupNorm):
                m.weight.normal_(), m.bias.normal_()
    x = torch.randn(3, 3, 64, 64)
    ref = x
    for m in net:
        if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3):
            ref = m(ref)
        elif isinstance(m, torch.nn.GroupNorm):
            ref = torch.nn.MaxPool2d(2)(torch.relu(m(ref)))  # the textbook order
        elif isinstance(m, torch.nn.Conv2d):
            ref = m(ref)
    assert torch.equal(net(x), ref)


@pytest.mark.parametrize("kind", list(stem.STEMS))
def test_the_config_key_replaces_the_patch_embedding_only(kind):
    oc = _open_clip()
    cfg = oc.get_model_config(f"unbag-tiny-{kind}")
    assert cfg[stem.KEY] == kind
    plain = stem.build(oc, {k: v for k, v in cfg.items() if k != stem.KEY})
    conv = stem.build(oc, cfg)
    assert isinstance(plain.visual.conv1, torch.nn.Conv2d) and isinstance(conv.visual.conv1, torch.nn.Sequential)
    same = {k: v.shape for k, v in plain.state_dict().items() if not k.startswith("visual.conv1")}
    assert same == {k: v.shape for k, v in conv.state_dict().items() if not k.startswith("visual.conv1")}
    with pytest.raises(UnbagError, match="unbag_stem 'deep'"):
        stem.build(oc, {**cfg, stem.KEY: "deep"})


@pytest.mark.parametrize("spec", SPECS)
def test_an_image_embedding_does_not_depend_on_its_batch(spec):
    torch.manual_seed(0)
    b = models.load(spec)
    x = torch.randn(4, 3, *b.image_size)
    with torch.no_grad():
        assert torch.allclose(b.encode_images(x).embeds[:1], b.encode_images(x[:1]).embeds, atol=1e-5)


@pytest.mark.parametrize("spec", SPECS)
def test_a_trained_stem_model_round_trips_as_a_folder_and_packed(tmp_path, spec):
    """A run's model/ folder (open_clip local-dir) and the built-in packing both rebuild the stem."""
    torch.manual_seed(0)
    b = models.load(spec)
    with torch.no_grad():
        for p in b.model.visual.conv1.parameters():
            p.add_(0.01)  # weights that a fresh build would not draw
    b.save(tmp_path / "run" / "model")
    x = torch.randn(2, 3, *b.image_size)
    again = models.load(str(tmp_path / "run" / "model"))
    packed = models.load(str(save_builtin(tmp_path / "run", spec, 0, tmp_path / "packed")))
    with torch.no_grad():
        want = b.encode_images(x).embeds
        assert torch.equal(again.encode_images(x).embeds, want)
        assert torch.allclose(packed.encode_images(x).embeds, want, atol=1e-6)


def test_export_says_plain_open_clip_cannot_build_the_stem(tmp_path, capsys):
    from unbag.cli import main
    torch.manual_seed(0)
    models.load(SPECS[0]).save(tmp_path / "m")
    assert main(["export", str(tmp_path / "m"), "--out", str(tmp_path / "oc")]) in (0, None)
    assert "cannot build unbag's own tower (unbag_stem)" in capsys.readouterr().out
    assert isinstance(models.load(str(tmp_path / "oc")).model.visual.conv1, torch.nn.Sequential)
