"""FT: full fine-tuning with symmetric InfoNCE; hard-negative pairs join the batch as extra pairs.

The FT baseline of arXiv 2604.11496 (the recipe of BiVLC's CLIP_fine_tuning.py, arXiv 2406.09952): when a sample
has a negative image and a negative caption, the (negative image, negative caption) pair is
appended as one more in-batch pair, giving (B + B_neg) x (B + B_neg) logits. Data without
negative pairs (files, webdataset) trains plain CLIP.
"""
from __future__ import annotations

import torch

from ...dist import gather, gather_varlen
from ...models.base import Backend
from .base import Needs, Objective
from .clip import clip_loss


def ft_loss(image: torch.Tensor, text: torch.Tensor, neg_image: torch.Tensor | None,
            neg_text: torch.Tensor | None, scale: torch.Tensor) -> torch.Tensor:
    """clip_loss over the positives with the negative pairs appended."""
    if neg_image is not None and len(neg_image):
        image, text = torch.cat([image, neg_image]), torch.cat([text, neg_text])
    return clip_loss(image, text, scale)


class FTObjective(Objective):
    name = "ft"
    needs = Needs(twins=True)
    defaults = dict(lr=1e-6, batch_size=400, warmup=50, eps=1e-6, weight_decay=0.1)

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        n = len(batch["pixels"])
        pixels = torch.cat([batch["pixels"], batch["twin_pixels"]])
        ids = torch.cat([batch["ids"], batch["twin_ids"]])
        image, text = backend.encode_images(pixels).embeds, backend.encode_texts(ids).embeds
        scale = backend.logit_scale
        neg_i, neg_t = gather_varlen(image[n:]), gather_varlen(text[n:])
        loss = ft_loss(gather(image[:n]), gather(text[:n]), neg_i, neg_t, scale)
        return loss, {"logit_scale": float(scale.detach()), "negatives": len(neg_i)}


OBJECTIVES = {FTObjective.name: FTObjective}  # registered (training/objectives/__init__.py collects it)
