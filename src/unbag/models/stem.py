"""A convolutional stem for open_clip ViTs (Xiao et al. 2021, "Early convolutions help
transformers see better", arXiv 2106.14881).

A ViT reads each patch through one linear map. On the 3D world a small object is about five pixels
wide at 64 px, inside one 8 px patch, and its shape is what that map must carry: trained from
scratch on single objects, a ViT with patch embedding reads shape at 55%, the same ViT with this
stem at 83%, a plain CNN at 97% (bench/shape_capacity3d.py, docs/world3d.md). The stem replaces
`visual.conv1` (stride-2 3x3 convolutions, channels doubling up to the tower's width, then a 1x1
projection), so the token grid, the position embeddings and every token path (SGI's `tokens`
mode, patch dropout, the heads' patch tokens) stay as they are. Group norm where the paper has
batch norm: an image's embedding never depends on its batch.

`pool` is the same idea with a CNN's blocks: a 3x3 convolution at full resolution, then 2x2 max
pooling, at each halving. Trained alone on single 3D objects it reads shape at 91% where `conv`
reads it at 83%, for about four times the stem's multiply-adds (11M a 64 px picture against 3M;
the built-in transformer above it costs 9M): bench/shape_capacity3d.py,
docs/log.md.

A model config names its stem as `"unbag_stem": "conv"` (or `"pool"`) beside open_clip's keys;
unbag builds such a model itself (open_clip's factory does not know the key), from its own configs
(`unbag-tiny-conv`, `unbag-tiny-pool`) and from local-dir folders alike.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..errors import UnbagError
from . import token_pool

KEY = "unbag_stem"


def _halvings(patch: int) -> int:
    if patch < 2 or patch & (patch - 1):
        raise UnbagError(f"{KEY}: a stem needs a patch size that is a power of 2 >= 2, not {patch}")
    return patch.bit_length() - 1


def conv_stem(width: int, patch: int) -> nn.Sequential:
    """Stride-2 3x3 conv, group norm, ReLU, log2(patch) times (channels width / 2^k up to width),
    then a 1x1 projection to width: [N, 3, H, W] -> [N, width, H / patch, W / patch]."""
    steps = _halvings(patch)
    layers, c = [], 3
    for i in range(steps):
        w = max(8, width >> (steps - 1 - i))
        layers += [nn.Conv2d(c, w, 3, stride=2, padding=1, bias=False), nn.GroupNorm(min(8, w), w), nn.ReLU()]
        c = w
    return nn.Sequential(*layers, nn.Conv2d(c, width, 1))


class MaxPool2x2(nn.Module):
    """2x2 max pooling, stride 2 (nn.MaxPool2d(2)'s output, bit for bit) as the maximum of the four
    pixel phases: on CPU, MaxPool2d also computes the indices of the maxima, and that made it the
    pool stem's costliest step (37% of the image tower's time; this is 6x faster)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[..., : x.shape[-2] // 2 * 2, : x.shape[-1] // 2 * 2]
        return torch.maximum(torch.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2]),
                             torch.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2]))


def pool_stem(width: int, patch: int) -> nn.Sequential:
    """3x3 conv at full resolution, group norm, ReLU, 2x2 max pool, log2(patch) times (channels
    width / 2^k up to width, at least 16), then a 1x1 projection to width: the same shapes as
    `conv_stem`."""
    steps = _halvings(patch)
    layers, c = [], 3
    for i in range(steps):
        w = max(16, width >> (steps - 1 - i))
        # ReLU after the pool: max and ReLU commute exactly (both monotone), and ReLU then reads a
        # quarter of the values; the parameters keep their indices (ReLU and the pool have none)
        layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.GroupNorm(min(8, w), w), MaxPool2x2(), nn.ReLU()]
        c = w
    return nn.Sequential(*layers, nn.Conv2d(c, width, 1))


STEMS = {"conv": conv_stem, "pool": pool_stem}


# the model-config keys of unbag's own towers: open_clip's factory knows neither
OWN_KEYS = (KEY, token_pool.KEY)


def build(oc, model_cfg: dict):
    """open_clip's CLIP for model_cfg, with the stem it names (if any) in place of visual.conv1
    and the token pooling it names (if any, token_pool.py)."""
    cfg = dict(model_cfg)
    stem, pool = cfg.pop(KEY, None), cfg.pop(token_pool.KEY, None)
    model = oc.CLIP(**cfg)
    if pool is not None:
        token_pool.apply(model.visual, pool)
    if stem is None:
        return model
    if stem not in STEMS:
        raise UnbagError(f"model config: {KEY} {stem!r} is not one of {', '.join(STEMS)}")
    v = cfg["vision_cfg"]
    if isinstance(v.get("layers"), (list, tuple)) or v.get("timm_model_name"):
        raise UnbagError(f"model config: {KEY} needs an open_clip ViT image tower")
    model.visual.conv1 = STEMS[stem](v["width"], v.get("patch_size", 16))
    return model
