"""What both alignment heads share: config, text inputs from cache fields, and the match loss."""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class HeadConfig:
    """Architecture of an alignment head (saved with its checkpoint)."""
    kind: str = "tflocal"  # tflocal | tflocal-li | tfglobal | tfregions
    text: str = "phrases"  # phrases (each phrase encoded alone) | tokens (the whole caption's tokens)
    dim: int = 64  # joint-space width of the frozen backbone
    width: int = 64
    layers: int = 1
    heads: int = 4
    patches: int = 64  # number of image tokens the head attends to (tflocal: patches, tfregions: regions)
    early: bool = False  # tflocal: attend to first-block patches as well as final ones
    calibrate: bool = False  # tflocal-li, when scoring: each phrase's score less its closest one-word change's


def text_inputs(fields: dict, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(text vectors [N, T, D], mask [N, T]) of a batch of cache rows for the head's text mode."""
    if text == "phrases":
        return fields["phr_global"], fields["phr_mask"]
    if text == "tokens":
        return fields["txt_tokens"], fields["txt_mask"]
    raise ValueError(f"unknown head text mode {text!r}")


def head_inputs(fields: dict, cfg: HeadConfig) -> tuple[dict, dict]:
    """(image inputs, text inputs) of a head from feature fields: keyword arguments of its forward."""
    text, mask = text_inputs(fields, cfg.text)
    img = {"img_global": fields["img_global"], "tokens": None if cfg.kind == "tfglobal" else image_tokens(fields, cfg),
           "tok_size": fields.get("reg_size")}
    txt = {"text": text, "mask": mask, "want": fields.get("phr_want")}
    if cfg.calibrate:
        txt |= {"alt": fields["phr_alt"], "alt_mask": fields["phr_alt_mask"]}
    return img, txt


def match_loss(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """CE of the positive (column 0) against its candidates; invalid candidates are masked out."""
    scores = scores.masked_fill(~valid, float("-inf"))
    return F.cross_entropy(scores, torch.zeros(len(scores), dtype=torch.long, device=scores.device))


def image_tokens(fields: dict, cfg: HeadConfig) -> torch.Tensor:
    """The image tokens a head attends to: SGI regions (tfregions), or final-layer patches plus
    first-block ones with early."""
    if cfg.kind == "tfregions":
        return fields["img_regions"]
    if not cfg.early:
        return fields["img_patches"]
    if "img_patches_early" not in fields:
        raise ValueError("this head attends to early patches but the features have none "
                         "(rebuild the cache with this unbag version)")
    return torch.cat([fields["img_patches"], fields["img_patches_early"]], 1)


def image_fields(cfg: HeadConfig) -> list[str]:
    """Cache fields a head reads for images."""
    if cfg.kind == "tfregions":
        return ["img_global", "img_regions", "reg_size"]
    if cfg.kind in ("tflocal", "tflocal-li"):
        return ["img_global", "img_patches"] + (["img_patches_early"] if cfg.early else [])
    return ["img_global"]


def text_fields(cfg: HeadConfig) -> list[str]:
    """Cache fields a head reads for texts."""
    if cfg.text == "tokens":
        return ["txt_tokens", "txt_mask"]
    return (["phr_global", "phr_mask"] + (["phr_want"] if cfg.kind == "tfregions" else [])
            + (["phr_alt", "phr_alt_mask"] if cfg.calibrate else []))
