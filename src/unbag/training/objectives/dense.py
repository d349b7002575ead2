"""CLIP with a dense alignment loss: phrases matched to patch tokens by late interaction.

unbag's pretraining variant for encoders whose patch tokens should align with text (what
TFLocal-LI starts from, docs/heads.md). The CLIP loss on global embeddings, plus `dense_weight`
times a symmetric InfoNCE over late-interaction scores in the manner of FILIP (arXiv 2111.07783):
score(caption c, image i) = mean over c's object phrases of the phrase's best cosine over i's
joint-space patch tokens. Phrases come from the rule-based segmenter (docs/sgi.md: object and
group phrases, "two small blue metal cubes", not relations) and are encoded on their own. FILIP
scores caption tokens against patches; phrases encoded alone are unbag's choice, as in TFLocal.
The dense loss uses the local batch only (no gathering across processes), unlike the CLIP term.

`swap_weight` adds a phrase-level hard-negative term: each phrase, against copies of itself with
one attribute word (size, color or material of the world's vocabulary) replaced by another value,
is scored by its best patch cosine in its own image, and must win (cross-entropy). In-batch
negatives rarely differ from a phrase in one attribute, so without it the patch tokens learn
color but hardly size or material (docs/heads.md). With `shape_swaps`, each phrase is also scored
against itself with its shape noun replaced by each other shape its caption names: the wrong
shape a binding swap gives a phrase is a neighbour's (docs/heads.md, what limits TFLocal-LI).
Both terms are unbag's own. The new attribute word comes from the vocabulary of the world the
captions speak of (`vocabulary`: flat, or 3d for CLEVR's colours), so a swap is never a word the
data never shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ...dist import gather
from ...errors import UnbagError
from ...models.base import Backend
from ...sgi import segments as seg
from ...world.captions import PLURAL
from ...world.phrases import NOUNS, VALUES, VOCABULARIES, attribute_changes
from ...world.styles import DEFAULT as DEFAULT_STYLE
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


def phrase_swaps(phrases: list[str], generator: torch.Generator | None = None,
                 vocabulary: tuple = VALUES) -> tuple[list[str], torch.Tensor]:
    """For each attribute word of each phrase, the phrase with that word replaced by another value
    of the same attribute (drawn at random from `vocabulary`), flat, and the phrase each belongs to [M]."""
    out, owner = [], []
    for k, text in enumerate(phrases):
        for others in attribute_changes(text, vocabulary):
            out.append(others[int(torch.randint(len(others), (1,), generator=generator))])
            owner.append(k)
    return out, torch.tensor(owner, dtype=torch.long)


def shape_swaps(phrases: list[str], owner: torch.Tensor) -> tuple[list[str], torch.Tensor]:
    """For each phrase ending in a shape noun, the phrase with that noun replaced by each other
    shape named in its caption (owner [K]: the caption of each phrase), in the noun's number,
    flat, and the phrase each belongs to [M]."""
    shapes: dict[int, set[str]] = {}
    for text, c in zip(phrases, owner.tolist()):
        if (noun := NOUNS.get(text.split()[-1])) is not None:
            shapes.setdefault(c, set()).add(noun)
    out, of = [], []
    for k, (text, c) in enumerate(zip(phrases, owner.tolist())):
        *head, last = text.split()
        if (noun := NOUNS.get(last)) is None:
            continue
        for other in sorted(shapes[c] - {noun}):
            out.append(" ".join(head + [other if last == noun else PLURAL[other]]))
            of.append(k)
    return out, torch.tensor(of, dtype=torch.long)


def all_swaps(phrases: list[str], owner: torch.Tensor, shapes: bool = False,
              generator: torch.Generator | None = None, vocabulary: tuple = VALUES) -> tuple[list[str], torch.Tensor]:
    """phrase_swaps and, with `shapes`, shape_swaps, grouped by phrase as swap_loss wants them [M]."""
    swaps, of = phrase_swaps(phrases, generator, vocabulary)
    if not shapes:
        return swaps, of
    more, more_of = shape_swaps(phrases, owner)
    order = torch.argsort(torch.cat([of, more_of]), stable=True).tolist()
    return [(swaps + more)[i] for i in order], torch.cat([of, more_of])[order]


def swap_loss(phrases: torch.Tensor, owner: torch.Tensor, swaps: torch.Tensor, swap_owner: torch.Tensor,
              patches: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of each phrase [K, D] (image of each: owner [K]) against its swaps [M, D]
    (phrase of each, ascending: swap_owner [M]), all scored by their best cosine over the image's patches."""
    phrases, swaps, patches = (F.normalize(x, dim=-1) for x in (phrases, swaps, patches))
    pos = torch.einsum("kd,kpd->kp", phrases, patches[owner]).amax(-1)  # [K]
    neg = torch.einsum("md,mpd->mp", swaps, patches[owner[swap_owner]]).amax(-1)  # [M]
    # logits [K, 1 + most swaps of a phrase], padded with -inf
    rank = torch.arange(len(swap_owner), device=neg.device) - torch.searchsorted(swap_owner, swap_owner)
    width = 1 + (int(rank.max()) + 1 if len(rank) else 0)
    # scaled before padding: scale * -inf would give the scale a NaN gradient (0 * inf)
    logits = torch.full((len(pos), width), float("-inf"), dtype=pos.dtype, device=pos.device)
    logits[:, 0] = scale * pos
    logits = logits.index_put((swap_owner, rank + 1), scale * neg)
    keep = torch.bincount(swap_owner, minlength=len(pos)) > 0  # phrases with no attribute word: no term
    if not keep.any():
        return pos.sum() * 0
    target = torch.zeros(int(keep.sum()), dtype=torch.long, device=pos.device)
    return F.cross_entropy(logits[keep], target)


def dense_loss(phrases: torch.Tensor, owner: torch.Tensor, patches: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE over late-interaction scores of B captions x B images (pair i matches i)."""
    n = patches.shape[0]
    logits = scale * late_interaction(F.normalize(phrases, dim=-1), owner, F.normalize(patches, dim=-1), n)
    target = torch.arange(n, device=logits.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


@dataclass
class DenseOptions:
    """clip-dense's own options."""
    dense_weight: float = field(default=1.0, metadata={"help": "weight of the phrase-patch late-interaction loss"})
    swap_weight: float = field(default=1.0, metadata={"help": "weight of the phrase-swap hard-negative loss"})
    shape_swaps: bool = field(default=False, metadata={"help": "the phrase swaps replace shape nouns too, with "
                                                                "the caption's other shapes"})
    vocabulary: str = field(default=DEFAULT_STYLE, metadata={
        "help": f"the world whose attribute words the phrase swaps draw from: {' | '.join(VOCABULARIES)} (default "
                f"{DEFAULT_STYLE}, the default world's; train on world@WORLD: with that WORLD)"})

    def __post_init__(self):
        if self.vocabulary not in VOCABULARIES:
            raise UnbagError(f"--vocabulary {self.vocabulary!r}: one of {', '.join(VOCABULARIES)}")


class DenseObjective(Objective):
    """clip_loss + dense_weight * dense_loss + swap_weight * swap_loss (attribute swaps, and shape
    swaps with shape_swaps), with the model's own logit scale for all three."""

    name = "clip-dense"
    defaults = dict(ClipObjective.defaults)  # pretraining from scratch, as `clip`
    options = DenseOptions

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        f = backend.encode_images(batch["pixels"], tokens=True)
        text = backend.encode_texts(batch["ids"]).embeds
        scale = backend.logit_scale
        loss = clip_loss(gather(f.embeds), gather(text), scale)
        dev = text.device
        phrases, owner = caption_phrases(batch["captions"])
        swaps, swap_owner = (all_swaps(phrases, owner, self.opts.shape_swaps,
                                       vocabulary=VOCABULARIES[self.opts.vocabulary])
                             if self.opts.swap_weight else ([], None))
        # phrases and their swaps through the text tower in one pass
        emb = backend.encode_texts(backend.tokenize(phrases + swaps).to(dev)).embeds
        emb, neg = emb[:len(phrases)], emb[len(phrases):]
        owner = owner.to(dev)
        dense = dense_loss(emb, owner, f.patches, scale)
        loss = loss + self.opts.dense_weight * dense
        logs = {"logit_scale": float(scale.detach()), "dense": float(dense.detach())}
        if swaps:
            swap = swap_loss(emb, owner, neg, swap_owner.to(dev), f.patches, scale)
            loss = loss + self.opts.swap_weight * swap
            logs["swap"] = float(swap.detach())
        return loss, logs


OBJECTIVES = {DenseObjective.name: DenseObjective}  # registered (training/objectives/__init__.py collects it)
