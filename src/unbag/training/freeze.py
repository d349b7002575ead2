"""Freezing policies: lock the image and/or text tower, optionally leaving its last N blocks trainable."""
from __future__ import annotations

import re

import torch

# parameter-name prefixes of each tower: open_clip CLIP, and transformers CLIPModel/SiglipModel
IMAGE = ("visual.", "vision_model.", "visual_projection.")
TEXT = ("transformer.", "token_embedding.", "positional_embedding", "ln_final.", "text_projection",
        "text_model.", "text.")
BLOCK = re.compile(r"(?:resblocks|blocks|layers?)\.(\d+)\.")


def tower(name: str) -> str | None:
    """'image', 'text', or None (logit scale/bias) for a parameter name."""
    if name.startswith(IMAGE) or ".visual." in name:
        return "image"
    if name.startswith(TEXT):
        return "text"
    return None


def apply(model: torch.nn.Module, lock_image: bool = False, lock_text: bool = False,
          unlock_last: int = 0) -> dict[str, int]:
    """Set requires_grad by policy; returns trainable/frozen parameter counts per tower."""
    names = [n for n, _ in model.named_parameters()]
    last = {}  # tower -> index of its last block
    for n in names:
        m = BLOCK.search(n)
        if m and tower(n):
            last[tower(n)] = max(last.get(tower(n), -1), int(m.group(1)))
    counts: dict[str, int] = {}
    for n, p in model.named_parameters():
        t = tower(n)
        locked = (t == "image" and lock_image) or (t == "text" and lock_text)
        if locked and unlock_last > 0:
            m = BLOCK.search(n)
            if m:
                locked = int(m.group(1)) <= last[t] - unlock_last
            else:  # embeddings come before the blocks; final norms and projections after them
                locked = any(k in n for k in ("embed", "conv1", "class_embedding", "ln_pre", "pre_layrnorm", "patch"))
        p.requires_grad_(not locked)
        key = f"{t or 'other'}/{'trainable' if not locked else 'frozen'}"
        counts[key] = counts.get(key, 0) + p.numel()
    return counts
