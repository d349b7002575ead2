"""TripletCLIP: two NegCLIP losses per step, the second with the negative image and caption as its positives.

TripletCLIP (Patel et al., NeurIPS 2024, arXiv 2411.02545; code tripletclip/TripletCLIP). Each sample
is a quadruple (x, y, y', x'): an image, its caption, a hard-negative caption and an image of that
negative caption. With u, u' the images' and v, v' the captions' unit embeddings (rows of the batch):

  NegCLIP(U, V, V') = 1/2 [ CE(s U [V; V']^T) + CE(s V U^T) ]    image->text over every caption and
                                                                 negative caption, text->image over U only
  L = NegCLIP(U, V, V') + NegCLIP(U', V', V)

One learnable scale s, no masking, both terms every step. A negative image is never a candidate for
a positive caption (nor the reverse): the t2i blocks hold only their own term's images. Each term is
halved as in the released code and open_clip's ClipLoss (the paper's equation is twice this; the
gradient's direction is the same), so the first term is unbag's NegCLIP with one negative. The
variants the paper ablates: `negclip_pp` (the first term only), `negimage` (captions choose their
image among the images and the negative images: 1/2 [CE(s U V^T) + CE(s V [U; U']^T)]).

Quadruples come from the world, whose twins are the negative caption's scene rendered exactly, or
from files that bring negative images (TripletCLIP's released webdataset, `triplets:FILE.jsonl`):
unbag generates no negative image. Samples without one are left out of the step, never mixed in as
pairs; captions repeated within a process's batch are dropped (the paper's data rarely repeats one,
a world's does), and so is a quadruple whose negative caption equals its caption.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ...dist import gather_varlen
from ...errors import UnbagError
from ...models.base import Backend
from .base import Needs, Objective
from .ft import FTObjective
from .negclip import negclip_loss

VARIANTS = ("tripletclip", "negclip_pp", "negimage")


def tripletclip_loss(u: torch.Tensor, v: torch.Tensor, u_neg: torch.Tensor, v_neg: torch.Tensor,
                     scale: torch.Tensor, variant: str = "tripletclip") -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Images u, u' and captions v, v' [N, d] of N quadruples -> (loss, its terms)."""
    if variant == "negimage":
        u, v, u_neg = F.normalize(u, dim=-1), F.normalize(v, dim=-1), F.normalize(u_neg, dim=-1)
        target = torch.arange(len(u), device=u.device)
        t2i = scale * v @ torch.cat([u, u_neg]).T
        loss = (F.cross_entropy(scale * u @ v.T, target) + F.cross_entropy(t2i, target)) / 2
        return loss, {"negimage": loss}
    t1 = negclip_loss(u, v, v_neg, scale)
    if variant == "negclip_pp":
        return t1, {"tcl_pos": t1}
    if variant != "tripletclip":
        raise ValueError(f"variant {variant!r}: one of {VARIANTS}")
    t2 = negclip_loss(u_neg, v_neg, v, scale)
    return t1 + t2, {"tcl_pos": t1, "tcl_neg": t2}


def quadruples(captions: list[str], twin_of: list[int], twin_captions: list[str]) -> list[int]:
    """Which of the twins to keep: the first of each caption string (its own or a negative one) and
    never one whose negative caption is its caption -> indices into twin_of."""
    seen, keep = set(), []
    for j, i in enumerate(twin_of):
        y, y_neg = captions[i], twin_captions[j]
        if y == y_neg or y in seen or y_neg in seen:
            continue
        seen.update((y, y_neg))
        keep.append(j)
    return keep


@dataclass
class TripletOptions:
    variant: str = field(default="tripletclip", metadata={
        "help": "tripletclip (both terms), negclip_pp (the first only) or negimage (negative images, no "
                "negative captions)"})

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise UnbagError(f"variant {self.variant!r}: one of {VARIANTS}")


class TripletCLIPObjective(Objective):
    name = "tripletclip"
    needs = Needs(twins=True, negative_images=True)
    options = TripletOptions
    # the paper gives no fine-tuning recipe ("hyper-parameters similar to baselines"): NegCLIP's, which is FT's
    defaults = FTObjective.defaults

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        keep = quadruples(batch["captions"], batch["twin_of"].tolist(), batch["twin_captions"])
        own = batch["twin_of"][keep].to(batch["pixels"].device)
        keep_t = torch.tensor(keep, dtype=torch.long, device=batch["pixels"].device)
        n = len(keep)
        if n:
            images = backend.encode_images(torch.cat([batch["pixels"][own], batch["twin_pixels"][keep_t]])).embeds
            texts = backend.encode_texts(torch.cat([batch["ids"][own], batch["twin_ids"][keep_t]])).embeds
        else:  # none in this process's share (other processes may have some): an empty share, as wide
            with torch.no_grad():
                d = backend.encode_texts(batch["ids"][:1]).embeds.shape[-1]
            images = texts = torch.zeros((0, d), device=batch["pixels"].device)
        scale = backend.logit_scale
        u, u_neg = gather_varlen(images[:n]), gather_varlen(images[n:])
        v, v_neg = gather_varlen(texts[:n]), gather_varlen(texts[n:])
        if not len(u):  # no quadruple in the whole batch (a world stream's rare step): nothing to learn
            return scale * 0.0, {"logit_scale": float(scale.detach()), "quadruples": 0}
        loss, parts = tripletclip_loss(u, v, u_neg, v_neg, scale, self.opts.variant)
        return loss, {"logit_scale": float(scale.detach()), "quadruples": len(u),
                      **{k: float(x.detach()) for k, x in parts.items()}}


OBJECTIVES = {TripletCLIPObjective.name: TripletCLIPObjective}  # registered (training/objectives/__init__.py collects it)
