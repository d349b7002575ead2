"""What both alignment heads share: config, text inputs from cache fields, and the match loss."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class HeadConfig:
    """Architecture of an alignment head (saved with its checkpoint)."""
    kind: str = "tflocal"  # tflocal | tfglobal
    text: str = "phrases"  # phrases (each phrase encoded alone) | tokens (the whole caption's tokens)
    dim: int = 64  # joint-space width of the frozen backbone
    width: int = 64
    layers: int = 1
    heads: int = 4
    patches: int = 64  # number of patch tokens the head attends to (tflocal)
    early: bool = False  # tflocal: attend to first-block patches as well as final ones


def text_inputs(fields: dict, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(text vectors [N, T, D], mask [N, T]) of a batch of cache rows for the head's text mode."""
    if text == "phrases":
        return fields["phr_global"], fields["phr_mask"]
    if text == "tokens":
        return fields["txt_tokens"], fields["txt_mask"]
    raise ValueError(f"unknown head text mode {text!r}")


def match_loss(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """CE of the positive (column 0) against its candidates; invalid candidates are masked out."""
    scores = scores.masked_fill(~valid, float("-inf"))
    return F.cross_entropy(scores, torch.zeros(len(scores), dtype=torch.long, device=scores.device))


def image_tokens(fields: dict, early: bool) -> torch.Tensor:
    """The patch tokens a head attends to: final-layer patches, plus first-block ones with early."""
    if not early:
        return fields["img_patches"]
    if "img_patches_early" not in fields:
        raise ValueError("this head attends to early patches but the features have none "
                         "(rebuild the cache with this unbag version)")
    return torch.cat([fields["img_patches"], fields["img_patches_early"]], 1)
