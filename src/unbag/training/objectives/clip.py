"""Standard CLIP pre-training: symmetric InfoNCE over in-batch pairs."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...dist import gather
from ...models.base import Backend
from .base import Objective


def clip_loss(image: torch.Tensor, text: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE: mean of image->text and text->image CE; features L2-normalised here."""
    image, text = F.normalize(image, dim=-1), F.normalize(text, dim=-1)
    logits = scale * image @ text.T
    target = torch.arange(len(image), device=image.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


class ClipObjective(Objective):
    """Image-caption pairs -> clip_loss with the model's own logit scale."""

    name = "clip"
    # from-scratch training of the built-in model (weights/builtin/TRAINING.md)
    defaults = dict(lr=1e-3, batch_size=128, warmup=50, eps=1e-6, weight_decay=0.1)

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        image = gather(backend.encode_images(batch["pixels"]).embeds)
        text = gather(backend.encode_texts(batch["ids"]).embeds)
        scale = backend.logit_scale
        loss = clip_loss(image, text, scale)
        return loss, {"logit_scale": float(scale.detach())}


OBJECTIVES = {ClipObjective.name: ClipObjective}  # registered (training/objectives/__init__.py collects it)
