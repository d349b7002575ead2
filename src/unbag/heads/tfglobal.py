"""TFGlobal: the same capacity as TFLocal over the frozen *global* image embedding only.

The control of arXiv 2604.11496 (TFGlobal): a transformer over [global image vector; text vectors]
(phrases or caption tokens, as TFLocal), scoring from the image position. If it matches TFLocal,
capacity and not local features explains TFLocal's gains.
"""
from __future__ import annotations

import torch
from torch import nn

from .common import Head, HeadConfig


class TFGlobal(Head):
    name = "tfglobal"
    attends = None  # the global image vector only

    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        self.img_in = nn.Linear(cfg.dim, cfg.width)
        self.txt_in = nn.Linear(cfg.dim, cfg.width)
        self.modality = nn.Parameter(torch.zeros(2, cfg.width))
        layer = nn.TransformerEncoderLayer(cfg.width, cfg.heads, 2 * cfg.width, dropout=0.0,
                                           batch_first=True, norm_first=True)
        # 2x layers: a decoder layer of TFLocal holds two attentions, an encoder layer one
        self.blocks = nn.TransformerEncoder(layer, 2 * cfg.layers, enable_nested_tensor=False)
        self.out = nn.Sequential(nn.LayerNorm(cfg.width), nn.Linear(cfg.width, 1))

    def forward(self, img_global: torch.Tensor, tokens: torch.Tensor | None, text: torch.Tensor,
                mask: torch.Tensor, tok_size=None, want=None) -> torch.Tensor:
        """Scores [N]; `tokens` (and `tok_size`, `want`) are ignored: this head sees the global image
        vector only."""
        img = self.img_in(img_global)[:, None] + self.modality[0]
        txt = self.txt_in(text) + self.modality[1]
        pad = torch.cat([torch.zeros_like(mask[:, :1]), ~mask], 1)
        h = self.blocks(torch.cat([img, txt], 1), src_key_padding_mask=pad)
        return self.out(h[:, 0]).squeeze(-1)


HEADS = {TFGlobal.name: TFGlobal}  # registered (heads/common.py `heads` collects it)
