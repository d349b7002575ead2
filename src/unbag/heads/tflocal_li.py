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

`calibrate` (unbag's, docs/heads.md): each phrase's score is its best (corrected) patch cosine
less that of its closest one-word change ("a small red cube" against "a large red cube",
"a small blue cube", ...: the world's sizes, colors and materials, and for a counted phrase its
other numbers, world/phrases.py `alternatives`), so a phrase counts by how much
better the image supports it than its nearest rival, not by how much the image looks like it at
all. Phrases naming no such attribute keep their plain score. Calibration is a scoring rule: the
correction is trained on the plain score (heads/train.py), and an untrained calibrated head ranks
as calibrated late interaction.
"""
from __future__ import annotations

import torch
from torch import nn

from .common import Head, HeadConfig


class TFLocalLI(Head):
    name = "tflocal-li"
    min_layers = 0  # its context layer is optional
    calibrates = True
    recipe = "unbag"

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

    def start(self, tokens: torch.Tensor, text: torch.Tensor, mask: torch.Tensor,
              alt: torch.Tensor | None = None, alt_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The late-interaction score the head starts from [N] (tokens, text and alt are unit vectors;
        `alt` [N, T, A, D] with `alt_mask` [N, T, A]: the calibrated start)."""
        best = lambda t: torch.einsum("nkd,npd->nkp", t, tokens).amax(-1)  # noqa: E731
        return combine(best, text, mask, alt, alt_mask)

    def forward(self, img_global: torch.Tensor, tokens: torch.Tensor, text: torch.Tensor, mask: torch.Tensor,
                tok_size=None, want=None, alt: torch.Tensor | None = None,
                alt_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Scores [N] of N (image, text) pairs: unit patch tokens [N, P, D], unit text vectors
        [N, T, D] with mask [N, T], and for a calibrated head each text vector's alternatives
        `alt` [N, T, A, D] with `alt_mask` [N, T, A] (`img_global`, `tok_size` and `want` are not used)."""
        if self.cfg.calibrate and alt is None:
            raise ValueError("a calibrated TFLocal-LI head scores phrases against their alternatives: "
                             "give alt and alt_mask (heads/features.py, alternative_features)")
        ctx = tokens + self.pos if self.context is None else self.context(tokens + self.pos)
        u = self.img_proj(torch.cat([tokens, ctx], -1))  # [N, P, w]

        def best(t: torch.Tensor) -> torch.Tensor:  # [N, M, D] -> best corrected cosine [N, M]
            return (torch.einsum("nkd,npd->nkp", t, tokens) + torch.einsum("nkw,npw->nkp", self.txt_proj(t), u)).amax(-1)
        return self.logit_scale.exp() * combine(best, text, mask, alt if self.cfg.calibrate else None, alt_mask)


def combine(best, text: torch.Tensor, mask: torch.Tensor, alt: torch.Tensor | None,
            alt_mask: torch.Tensor | None) -> torch.Tensor:
    """Mean over the text vectors of `best` (text [N, M, D] -> [N, M]); with alternatives, each
    text vector's less its closest alternative's (a phrase without any: less nothing)."""
    t = max(int(mask.sum(1).max()), 1) if mask.numel() else mask.shape[1]  # padding is masked: leave it out
    text, mask = text[:, :t], mask[:, :t]
    if alt is not None:
        a = int(alt_mask[:, :t].sum(-1).max()) if alt_mask.numel() else 0
        alt, alt_mask = (alt[:, :t, :a], alt_mask[:, :t, :a]) if a else (None, None)
    score = best(text)
    if alt is not None:
        closest = best(alt.flatten(1, 2)).view(alt.shape[:3]).masked_fill(~alt_mask, float("-inf")).amax(-1)
        score = score - torch.where(alt_mask.any(-1), closest, torch.zeros_like(closest))
    score = score.masked_fill(~mask, 0.0)
    return score.sum(1) / mask.sum(1).clamp(min=1)


HEADS = {TFLocalLI.name: TFLocalLI}  # registered (heads/common.py `heads` collects it)
