"""LoRA (arXiv 2106.09685) as FSC-CLIP applies it to both towers (arXiv 2410.05210, its released code).

Adapted: every Linear outside attention (the MLPs), every Conv2d (a ViT's patch embedding, a stem's
convolutions) and each attention's input projection (open_clip's fused q/k/v `in_proj_weight`;
q/k/v of a transformers model) and output projection. Not adapted: embeddings, norms, the towers'
projection matrices and the logit scale, which all stay frozen. Each adapted weight W becomes
W + (alpha / r) B A through a torch parametrization, so the model's own forward is unchanged and
`merge` folds the update back into plain weights for export.

Initialisation as the released code: A Kaiming-uniform and B zero (the update starts at 0), except
the attention input projection, where both are Xavier-uniform, so the patched model does not equal
the pre-trained one at step 0; `zero_init_attn` zeroes that B too.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils import parametrize

ATTN_IN = ("in_proj_weight", "q_proj", "k_proj", "v_proj")


class LoRA(nn.Module):
    """The update of one weight: W -> W + scale * (B @ A), reshaped to W (a convolution's kernel)."""

    def __init__(self, shape: torch.Size, rank: int, alpha: float, xavier_b: bool = False):
        super().__init__()
        if len(shape) == 4:  # Conv2d [out, in, k, k]: factors (r k, in k) and (out k, r k), as loralib
            k = shape[2]
            rows, cols, r = shape[0] * k, shape[1] * k, rank * k
        else:
            rows, cols, r = shape[0], shape[1], rank
        self.lora_A = nn.Parameter(torch.empty(r, cols))
        self.lora_B = nn.Parameter(torch.zeros(rows, r))
        if xavier_b:  # the released code's attention input projection: both factors Xavier
            nn.init.xavier_uniform_(self.lora_A)
            nn.init.xavier_uniform_(self.lora_B)
        else:
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight + (self.lora_B @ self.lora_A).view(weight.shape).to(weight.dtype) * self.scale


def targets(model: nn.Module) -> list[tuple[str, nn.Module, str, bool]]:
    """(name, module, weight attribute, is an attention input projection) of every weight LoRA adapts."""
    out = []
    for name, m in model.named_modules():
        if isinstance(m, nn.MultiheadAttention):
            out.append((name, m, "in_proj_weight", True))
            out.append((f"{name}.out_proj", m.out_proj, "weight", False))
        elif isinstance(m, nn.Conv2d):
            out.append((name, m, "weight", False))
        elif isinstance(m, nn.Linear) and not name.endswith("attn.out_proj"):  # MHA's own: above
            leaf = name.rsplit(".", 1)[-1]
            if "attn" not in name or leaf in ATTN_IN or leaf == "out_proj":
                out.append((name, m, "weight", leaf in ATTN_IN))
    return out


def apply(model: nn.Module, rank: int = 4, alpha: float = 1.0, zero_init_attn: bool = False) -> dict[str, int]:
    """Freeze every parameter, add trainable LoRA factors to `targets(model)`; -> parameter counts."""
    for p in model.parameters():
        p.requires_grad_(False)
    for _, m, attr, attn_in in targets(model):
        w = getattr(m, attr)
        lora = LoRA(w.shape, rank, alpha, xavier_b=attn_in and not zero_init_attn).to(w.device)
        parametrize.register_parametrization(m, attr, lora)
    counts = {"lora/trainable": 0, "other/frozen": 0}
    for n, p in model.named_parameters():
        trainable = "lora_" in n
        p.requires_grad_(trainable)
        counts["lora/trainable" if trainable else "other/frozen"] += p.numel()
    return counts


def merge(model: nn.Module) -> None:
    """Fold every LoRA update into its weight and drop the parametrizations (plain weights again)."""
    for m in list(model.modules()):
        if parametrize.is_parametrized(m):
            for attr in list(m.parametrizations.keys()):
                parametrize.remove_parametrizations(m, attr, leave_parametrized=True)


__all__ = ["LoRA", "apply", "merge", "targets"]
