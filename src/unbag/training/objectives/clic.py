"""CLIC: text-tower fine-tuning on concatenated image pairs (arXiv 2505.24424, following its released code).

Hard-negative steps see an image pair x1|x2 with texts [p1; p2; p3; p4; n] (blocks of B):
  L_cont  = 1/2 (mean_k CE_i2t(s u p_k^T) + mean_k CE_t2i(s p_k u^T))   (negatives not in it)
  L_S-neg = mean_k CE([s cos(u_i, p_k,i), s cos(u_i, n_i)], 0)
  L_uni   = mean_i ||t(p1_i) - t(p2_i)||^2                               (normalised features)
  L = 0.5 L_cont + 0.5 L_S-neg + 1.0 L_uni
and alternate with plain CLIP steps on (x1, c1), as in the released code (AmitPeleg/CLIC).
The vision tower is frozen by default. Deviation (docs/training.md): the concatenated images use
the model's own normalisation, not ImageNet's mean/std.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...dist import gather
from ...models.base import Backend
from .base import Needs, Objective
from .clip import clip_loss

N_POS = 4
WEIGHTS = {"cont": 0.5, "sneg": 0.5, "uni": 1.0}


def clic_loss(image: torch.Tensor, texts: torch.Tensor, scale: torch.Tensor,
              weights: dict[str, float] = WEIGHTS) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """CLIC's hard-negative-step loss: image [B, d], texts [5, B, d] = p1..p4, n -> (loss, parts)."""
    u = F.normalize(image, dim=-1)
    t = F.normalize(texts, dim=-1)
    pos, neg = t[:N_POS], t[N_POS]
    target = torch.arange(len(u), device=u.device)
    i2t = torch.stack([F.cross_entropy(scale * u @ p.T, target) for p in pos]).mean()
    t2i = torch.stack([F.cross_entropy(scale * p @ u.T, target) for p in pos]).mean()
    cont = (i2t + t2i) / 2
    neg_logit = scale * (u * neg).sum(-1)
    zeros = torch.zeros_like(target)
    sneg = torch.stack([F.cross_entropy(torch.stack([scale * (u * p).sum(-1), neg_logit], 1), zeros)
                        for p in pos]).mean()
    uni = (pos[0] - pos[1]).pow(2).sum(-1).mean()
    parts = {"cont": cont, "sneg": sneg, "uni": uni}
    return sum(weights[k] * v for k, v in parts.items()), parts


class CLICObjective(Objective):
    name = "clic"
    needs = Needs(concat=True)
    log_period = 2  # a hard-negative step, then a plain one: the log shows both
    # batch 200 per GPU x 4 in the paper; linear warm-up over 0.2 of the run, cosine to 1e-8
    defaults = dict(lr=1e-6, batch_size=800, warmup=0.2, min_lr=1e-8, eps=1e-8, weight_decay=0.1,
                    lock_image=True)

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        scale = backend.logit_scale
        image = gather(backend.encode_images(batch["pixels"]).embeds)
        if batch["mode"] != "concat":
            text = gather(backend.encode_texts(batch["ids"]).embeds)
            return clip_loss(image, text, scale), {"logit_scale": float(scale.detach()), "clic_step": 0.0}
        text = backend.encode_texts(batch["text_ids"]).embeds
        text = text.view(N_POS + 1, -1, text.shape[-1])
        text = torch.stack([gather(block) for block in text])  # same layout as one process
        loss, parts = clic_loss(image, text, scale)
        return loss, {"logit_scale": float(scale.detach()), "clic_step": 1.0,
                      **{k: float(v.detach()) for k, v in parts.items()}}


OBJECTIVES = {CLICObjective.name: CLICObjective}  # registered (training/objectives/__init__.py collects it)
