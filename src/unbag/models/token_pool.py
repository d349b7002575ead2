"""Max pooling of a ViT's patch tokens as its image embedding (unbag's candidate, not open_clip's).

open_clip's ViT pools its class token (`tok`) or the mean of its patch tokens (`avg`). A CNN takes
the maximum over its feature map instead, and on the 3D world that is what reads a small object's
shape: trained from scratch on single objects at 64 px, the built-in ViT shape with the pool stem
reads shape at 91% through its class token and at 99% through the maximum of its patch tokens
(`bench/shape_capacity3d.py`, docs/log.md). A small object fills one
token of 64; a maximum keeps it where a class token or a mean dilutes it. Pretrained with the
built-in recipe, though, it reads shapes in scenes no better (90.8% against 90.0%) and SGI's counts
do not move (docs/log.md, stage 10): a candidate, not the built-in.

A model config asks for it with `"unbag_pool": "max"` beside open_clip's keys (stem.py builds
such a model). Only the pooled embedding changes: ln_post and the projection apply as before, and
every token path (SGI's `tokens` mode, patch dropout, the heads' patch tokens) stays the same.
"""
from __future__ import annotations

import types

import torch
import torch.nn as nn

from ..errors import UnbagError

KEY = "unbag_pool"


def _max_pool(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """open_clip's `_global_pool` contract: (pooled [N, D], patch tokens [N, P, D]) of [CLS; patches]."""
    return x[:, 1:].amax(dim=1), x[:, 1:]


POOLS = {"max": _max_pool}


def apply(visual: nn.Module, kind: str) -> None:
    """Make an open_clip ViT pool its patch tokens by `kind` (POOLS)."""
    if kind not in POOLS:
        raise UnbagError(f"model config: {KEY} {kind!r} is not one of {', '.join(POOLS)}")
    if not hasattr(visual, "_global_pool") or getattr(visual, "attn_pool", None) is not None:
        raise UnbagError(f"model config: {KEY} needs an open_clip ViT image tower without attentional pooling")
    # an instance attribute in place of the class's method: copies (EMA teachers) and DDP keep it
    visual._global_pool = types.MethodType(POOLS[kind], visual)
