"""TFLocal-LI: unbag's patch-token TFLocal that starts from the frozen alignment (late interaction).

The paper's TFLocal (arXiv 2604.11496; unbag's `tflocal`) learns its image-text alignment from
scratch, and on fine-tuning data without the held-out combinations it learns those data's
combinations (docs/heads.md). This head starts from the encoder's own alignment instead: each text
vector (a caption phrase encoded on its own, or a caption token) takes its best cosine over the
frozen patch tokens, averaged over the text vectors — late interaction as in FILIP (arXiv
2111.07783) and ColBERT (arXiv 2004.12832). One transformer layer lets each patch see the others
(with learned positions), and a low-rank bilinear correction <U(context_p), V(text_k)> is added to
every (text vector, patch) cosine; U's last layer starts at zero, so an untrained head ranks
exactly as its late-interaction start and training can only move it from there (the principle
that makes TFRegions keep SGI's out-of-distribution ability, without needing a region source).
A learned temperature sharpens the match loss, as in TFRegions. `layers` 0 leaves out the
context layer: the correction then reads each patch and its position alone.
"""
from __future__ import annotations

import torch
from torch import nn

from .common import HeadConfig


class TFLocalLI(nn.Module):
    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        d, w = cfg.dim, cfg.width
        self.pos = nn.Parameter(torch.zeros(1, cfg.patches, d))
        layer = nn.TransformerEncoderLayer(d, cfg.heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
        # layers 0: no context, the correction reads each patch with its position only
        self.context = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False) if cfg.layers else None
        self.img_proj = nn.Sequential(nn.Linear(2 * d, 2 * w), nn.GELU(), nn.Linear(2 * w, w))
        self.txt_proj = nn.Sequential(nn.Linear(d, 2 * w), nn.GELU(), nn.Linear(2 * w, w))
        nn.init.zeros_(self.img_proj[-1].weight)
        nn.init.zeros_(self.img_proj[-1].bias)
        self.logit_scale = nn.Parameter(torch.tensor(50.0).log())

    def start(self, tokens: torch.Tensor, text: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The late-interaction score the head starts from: mean over text vectors of the best
        patch cosine [N] (tokens and text are unit vectors)."""
        best = torch.einsum("nkd,npd->nkp", text, tokens).amax(-1).masked_fill(~mask, 0.0)
        return best.sum(1) / mask.sum(1).clamp(min=1)

    def forward(self, img_global: torch.Tensor, tokens: torch.Tensor, text: torch.Tensor, mask: torch.Tensor,
                tok_size=None, want=None) -> torch.Tensor:
        """Scores [N] of N (image, text) pairs: unit patch tokens [N, P, D], unit text vectors
        [N, T, D] with mask [N, T] (`img_global`, `tok_size` and `want` are not used)."""
        ctx = tokens + self.pos if self.context is None else self.context(tokens + self.pos)
        u = self.img_proj(torch.cat([tokens, ctx], -1))  # [N, P, w]
        v = self.txt_proj(text)  # [N, T, w]
        sim = torch.einsum("nkd,npd->nkp", text, tokens) + torch.einsum("nkw,npw->nkp", v, u)
        best = sim.amax(-1).masked_fill(~mask, 0.0)
        return self.logit_scale.exp() * best.sum(1) / mask.sum(1).clamp(min=1)
