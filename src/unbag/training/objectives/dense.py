"""CLIP with a dense alignment loss: phrases matched to patch tokens by late interaction.

unbag's pretraining variant for encoders whose patch tokens should align with text (what
TFLocal-LI starts from, docs/heads.md). The CLIP loss on global embeddings, plus `dense_weight`
times a symmetric InfoNCE over late-interaction scores in the manner of FILIP (arXiv 2111.07783):
score(caption c, image i) = mean over c's object phrases of the phrase's best cosine over i's
joint-space patch tokens. Phrases come from the rule-based segmenter (docs/sgi.md: object and
group phrases, "two small blue metal cubes", not relations) and are encoded on their own. FILIP scores caption tokens against patches; phrases encoded alone are
unbag's choice, as in TFLocal. The dense loss uses the local batch only (no gathering across
processes), unlike the CLIP term.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ...dist import gather
from ...models.base import Backend
from ...sgi import segments as seg
from .base import Objective
from .clip import ClipObjective, clip_loss

KINDS = ("object", "group")  # the phrases a patch can show; a relation phrase spans two objects


def caption_phrases(captions: list[str]) -> tuple[list[str], torch.Tensor]:
    """The object and group phrases of each caption, flat, and the caption each belongs to [K]."""
    phrases, owner = [], []
    for c, text in enumerate(captions):
        got = [s.text for s in seg.parse_rules(text) if s.kind in KINDS]
        phrases += got
        owner += [c] * len(got)
    return phrases, torch.tensor(owner, dtype=torch.long)


def late_interaction(phrases: torch.Tensor, owner: torch.Tensor, patches: torch.Tensor, n_texts: int) -> torch.Tensor:
    """[texts, images]: mean over each text's phrases (unit [K, D]; text of each: owner [K]) of the
    phrase's best cosine over each image's unit patch tokens [N, P, D]."""
    best = torch.einsum("kd,npd->knp", phrases, patches).amax(-1)  # [K, N]
    total = torch.zeros(n_texts, patches.shape[0], dtype=best.dtype, device=best.device).index_add(0, owner, best)
    count = torch.bincount(owner, minlength=n_texts).clamp(min=1).to(best.dtype)
    return total / count[:, None]


def dense_loss(phrases: torch.Tensor, owner: torch.Tensor, patches: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE over late-interaction scores of B captions x B images (pair i matches i)."""
    n = patches.shape[0]
    logits = scale * late_interaction(F.normalize(phrases, dim=-1), owner, F.normalize(patches, dim=-1), n)
    target = torch.arange(n, device=logits.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


class DenseObjective(Objective):
    """clip_loss + dense_weight * dense_loss, with the model's own logit scale for both."""

    name = "clip-dense"
    defaults = dict(ClipObjective.defaults)  # pretraining from scratch, as `clip`
    dense_weight = 1.0  # set by the engine from TrainConfig.dense_weight

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        f = backend.encode_images(batch["pixels"], tokens=True)
        text = backend.encode_texts(batch["ids"]).embeds
        scale = backend.logit_scale
        loss = clip_loss(gather(f.embeds), gather(text), scale)
        phrases, owner = caption_phrases(batch["captions"])
        ids = backend.tokenize(phrases).to(text.device)
        dense = dense_loss(backend.encode_texts(ids).embeds, owner.to(text.device), f.patches, scale)
        return loss + self.dense_weight * dense, {"logit_scale": float(scale.detach()),
                                                  "dense": float(dense.detach())}
