"""NegCLIP: image->text over [positives; hard-negative captions], text->image over positives.

NegCLIP (arXiv 2210.01936). Every image sees every negative caption of the batch as a column
(B x (B + B_neg) logits), as in NegCLIP's released code; text->image is B x B over positives only.
Negatives: binding swaps on the ctrl world; a POS-class word swap (negatives/swap.py) on free text.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...dist import gather, gather_varlen
from ...models.base import Backend
from .base import Needs, Objective
from .ft import FTObjective


def negclip_loss(image: torch.Tensor, text: torch.Tensor, neg_text: torch.Tensor,
                 scale: torch.Tensor) -> torch.Tensor:
    """Mean of i2t CE over [positives; negatives] columns and t2i CE over positives."""
    image, text = F.normalize(image, dim=-1), F.normalize(text, dim=-1)
    neg_text = F.normalize(neg_text, dim=-1)
    target = torch.arange(len(image), device=image.device)
    i2t = scale * image @ torch.cat([text, neg_text]).T
    t2i = scale * text @ image.T
    return (F.cross_entropy(i2t, target) + F.cross_entropy(t2i, target)) / 2


class NegCLIPObjective(Objective):
    name = "negclip"
    needs = Needs(negatives=True)
    defaults = FTObjective.defaults  # FT's recipe: NegCLIP's own is for another scale of data and model

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        n = len(batch["ids"])
        image = gather(backend.encode_images(batch["pixels"]).embeds)
        text = backend.encode_texts(torch.cat([batch["ids"], batch["neg_ids"]])).embeds
        scale = backend.logit_scale
        negs = gather_varlen(text[n:])
        loss = negclip_loss(image, gather(text[:n]), negs, scale)
        return loss, {"logit_scale": float(scale.detach()), "negatives": len(negs)}


OBJECTIVES = {NegCLIPObjective.name: NegCLIPObjective}  # registered (training/objectives/__init__.py collects it)
