"""DeGLA: EMA self-distillation plus image- and text-grounded contrast over typed hard negatives.

arXiv 2504.16801; the paper's equations, not the released code where they differ (its
text-grounded mask picks other samples' negatives). With student features v_i, t_i, tn_ik and the
EMA teacher's v*, t*, tn* (all L2-normalised):
  L_base    = 1/2 (CE(s v [T; TN]^T) + CE(s T v^T))  every image against all positives and all
              negatives of the batch (the code's reading; base="own": only its own K negatives)
  L_IGC     = -log e^{s v_i.t_i} / (e^{s v_i.t_i} + sum_k e^{s v_i.tn_ik})
  L_TGC     = -log e^{t_i.t*_i/tau} / (e^{t_i.t*_i/tau} + sum_k e^{t_i.tn_ik/tau}),  tau = 0.1
  L_distill = sum_i ||v_i - v*_i||^2 + ||t_i - t*_i||^2 + sum_k ||tn_ik - tn*_ik||^2
  L = L_base + 0.1 L_IGC + 0.1 L_TGC + 0.005 L_distill
Negatives a sample lacks (a caption with no valid negative) are masked out of every term.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...dist import gather
from ...models.base import Backend
from .base import Needs, Objective

WEIGHTS = {"igc": 0.1, "tgc": 0.1, "distill": 0.005}


def degla_loss(v: torch.Tensor, t: torch.Tensor, tn: torch.Tensor, tv: torch.Tensor, tt: torch.Tensor,
               ttn: torch.Tensor, scale: torch.Tensor, valid: torch.Tensor | None = None, tau: float = 0.1,
               base: str = "batch", weights: dict[str, float] = WEIGHTS
               ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Student v, t [B, d], tn [B, K, d]; teacher tv, tt, ttn alike; valid [B, K] -> (loss, parts)."""
    v, t, tn = (F.normalize(x, dim=-1) for x in (v, t, tn))
    tv, tt, ttn = (F.normalize(x, dim=-1).detach() for x in (tv, tt, ttn))
    B, K, _ = tn.shape
    valid = torch.ones(B, K, dtype=torch.bool, device=v.device) if valid is None else valid
    target = torch.arange(B, device=v.device)
    own = scale * torch.einsum("bd,bkd->bk", v, tn)  # [B, K] each image vs its own negatives
    if base == "batch":
        neg_all = scale * v @ tn.reshape(B * K, -1).T  # [B, B*K]
        i2t = torch.cat([scale * v @ t.T, neg_all.masked_fill(~valid.reshape(1, -1), float("-inf"))], 1)
    elif base == "own":
        i2t = torch.cat([scale * v @ t.T, own.masked_fill(~valid, float("-inf"))], 1)
    else:
        raise ValueError(f"base must be 'batch' or 'own', not {base!r}")
    l_base = (F.cross_entropy(i2t, target) + F.cross_entropy(scale * t @ v.T, target)) / 2
    pos = scale * (v * t).sum(-1, keepdim=True)
    zeros = torch.zeros_like(target)
    l_igc = F.cross_entropy(torch.cat([pos, own.masked_fill(~valid, float("-inf"))], 1), zeros)
    anchor = (t * tt).sum(-1, keepdim=True) / tau
    negs = torch.einsum("bd,bkd->bk", t, tn) / tau
    l_tgc = F.cross_entropy(torch.cat([anchor, negs.masked_fill(~valid, float("-inf"))], 1), zeros)
    l_distill = ((v - tv) ** 2).sum() + ((t - tt) ** 2).sum() + (((tn - ttn) ** 2).sum(-1) * valid).sum()
    parts = {"base": l_base, "igc": l_igc, "tgc": l_tgc, "distill": l_distill}
    return l_base + sum(w * parts[k] for k, w in weights.items()), parts


class DeGLAObjective(Objective):
    name = "degla"
    needs = Needs(typed=True, teacher=True)
    teacher: Backend | None = None
    defaults = dict(lr=1e-6, batch_size=256, warmup=50, eps=1e-6, weight_decay=0.1, ema=0.9996)

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        b = len(batch["pixels"])
        k = batch["typed_ids"].shape[0] // b
        ids = torch.cat([batch["ids"], batch["typed_ids"]])
        v = backend.encode_images(batch["pixels"]).embeds
        text = backend.encode_texts(ids).embeds
        with torch.no_grad():
            tv = self.teacher.encode_images(batch["pixels"]).embeds
            ttext = self.teacher.encode_texts(ids).embeds
        d = text.shape[-1]
        t, tn = gather(text[:b]), gather(text[b:].view(b, k, d))
        tt, ttn = gather(ttext[:b]), gather(ttext[b:].view(b, k, d))
        valid = gather(batch["typed_valid"].to(v.device))
        scale = backend.logit_scale
        loss, parts = degla_loss(gather(v), t, tn, gather(tv), tt, ttn, scale, valid)
        return loss, {"logit_scale": float(scale.detach()), **{k_: float(x.detach()) for k_, x in parts.items()}}


OBJECTIVES = {DeGLAObjective.name: DeGLAObjective}  # registered (training/objectives/__init__.py collects it)
