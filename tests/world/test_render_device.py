"""The 3D renderer on a device: the CPU's bytes unchanged, a GPU's within float rounding of them."""
import numpy as np
import pytest
import torch

from unbag.errors import UnbagError
from unbag.world import swap3d
from unbag.world.render3d import picture, shaded
from unbag.world.styles import WORLDS

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (the GPU check runs it: bench/gpu_check.sh)")


def _scenes(n=3, px=64):
    return [s for k in range(n) for s in swap3d.build_item(0, "ood", swap3d.CATEGORIES[k], 0, px).scenes]


def test_the_cpu_device_draws_the_same_bytes():
    for s in _scenes(2, 48):
        assert (picture(s, 48) == picture(s, 48, "cpu")).all() and (shaded(s, 48) == shaded(s, 48, device="cpu")).all()
    w = WORLDS["3d"]
    a, b = w.swap_item(0, "id", "count", 1, 48)[1], w.swap_item(0, "id", "count", 1, 48, "cpu")[1]
    assert all((x == y).all() for x, y in zip(a, b))


def test_a_gpu_build_without_a_gpu_is_a_clear_error(tmp_path, monkeypatch):
    from unbag.world.io import build

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UnbagError, match="--device cuda: no CUDA device here"):
        build(tmp_path / "b", per_category=1, style="3d", device="cuda", progress=False)
    assert not (tmp_path / "b").exists()


@CUDA
def test_a_gpu_draws_the_cpu_picture_up_to_float_rounding():
    for s in _scenes(3, 96):
        cpu, gpu = picture(s, 96).astype(int), picture(s, 96, "cuda").astype(int)
        diff = np.abs(cpu - gpu)
        # sums in another order move a channel by a level or two, and flip a few rays at an edge
        assert np.percentile(diff, 99) <= 2 and (diff.max(-1) > 8).mean() < 0.005, (diff.max(), (diff > 8).mean())
