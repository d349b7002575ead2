"""TFLocal: text vectors cross-attend to frozen patch tokens; one match score per (image, text).

TFLocal of arXiv 2604.11496 (the architecture is unbag's choice, docs/heads.md). Each text vector (a caption phrase
encoded on its own, or a caption token) is a query; `layers` transformer decoder layers let the
queries attend to the projected patch tokens (with learned positions) and to each other; each query
yields a score, averaged over the real (unmasked) queries. Over caption tokens (`--text tokens`) it
is the paper's TFLocal; over phrases (the default, and the shipped heads) unbag's variant.
"""
from __future__ import annotations

import torch
from torch import nn

from .common import Head, HeadConfig


class TFLocal(Head):
    name = "tflocal"

    @classmethod
    def recipe_of(cls, head: dict) -> str:
        return "paper" if head.get("text") == "tokens" else "unbag"  # the paper's reads caption tokens

    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        self.img_in = nn.Linear(cfg.dim, cfg.width)
        self.txt_in = nn.Linear(cfg.dim, cfg.width)
        self.pos = nn.Parameter(torch.zeros(1, cfg.patches + 1, cfg.width))
        layer = nn.TransformerDecoderLayer(cfg.width, cfg.heads, 2 * cfg.width, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerDecoder(layer, cfg.layers)
        self.out = nn.Sequential(nn.LayerNorm(cfg.width), nn.Linear(cfg.width, 1))

    def forward(self, img_global: torch.Tensor, tokens: torch.Tensor, text: torch.Tensor,
                mask: torch.Tensor, tok_size=None, want=None) -> torch.Tensor:
        """Scores [N] of N (image, text) pairs: patch tokens [N, P, D], text [N, T, D], mask [N, T]
        (`tok_size` and `want` are for TFRegions and ignored here)."""
        memory = self.img_in(torch.cat([img_global[:, None], tokens], 1)) + self.pos
        h = self.blocks(self.txt_in(text), memory, tgt_key_padding_mask=~mask)
        s = self.out(h).squeeze(-1).masked_fill(~mask, 0.0)
        return s.sum(1) / mask.sum(1).clamp(min=1)


HEADS = {TFLocal.name: TFLocal}  # registered (heads/common.py `heads` collects it)
