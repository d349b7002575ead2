"""clip-dense plus single objects named: each picture's object, seen alone, picks its description.

SGI reads a scene one region at a time: each object's box, the rest of the picture filled
(docs/sgi.md, mask mode), sent through the image tower. A model pretrained on whole scenes and
their captions never sees such a picture, and it reads an object's shape there at about 90%
(docs/log.md), where counting needs about 97%. `clip-regions` adds
that input to pretraining: for every picture of the batch one of its objects, cut out as SGI's
mask mode shows it (`training/data.py`, `WorldSource.object_view`: the object's box, each edge
moved by up to a pixel, the rest filled with each row's median on the 3D world), and a
cross-entropy over every description of one object the world's captions give (96 on the 3D
world: shape x size x colour x material, `world/phrases.py`), scored by cosine with the model's
own logit scale; the object's own description is the target. Among the candidates are the ones a
count check weighs against each other (the same object as another shape) and every other
attribute value, so the term asks for each attribute of each object, shape included.

unbag's own objective; region-text contrast has precedents (RegionCLIP, arXiv 2112.09106, on
proposals of photos with pseudo-labels), the world's own descriptions as classifier weights
are what UniCL does with class names (arXiv 2204.03610). The candidate descriptions pass the
text tower once a step (local to each process, like clip-dense's phrase terms).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ...errors import UnbagError
from ...models.base import Backend
from ...world.phrases import descriptions
from .base import Needs
from .dense import DenseObjective, DenseOptions


def object_loss(objects: torch.Tensor, candidates: torch.Tensor, target: torch.Tensor,
                scale: torch.Tensor, among: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of each object's embedding [M, D] over the candidate descriptions [T, D]
    (cosine times `scale`; only those `among` [M, T] allows, when given), its own description target
    [M]; and the share it gets right."""
    logits = scale * F.normalize(objects, dim=-1) @ F.normalize(candidates, dim=-1).T
    if among is not None:
        logits = logits.masked_fill(~among, float("-inf"))
    return F.cross_entropy(logits, target), (logits.argmax(1) == target).float().mean()


def alike_but_noun(candidates: list[str]) -> torch.Tensor:
    """[T, T]: whether two descriptions are alike in every word but their last (the noun: "a large
    gray rubber cube" and "... sphere")."""
    heads = [c.rsplit(" ", 1)[0] for c in candidates]
    return torch.tensor([[a == b for b in heads] for a in heads])


@dataclass
class RegionOptions(DenseOptions):
    """clip-regions' own options (clip-dense's and two more)."""
    object_weight: float = field(default=1.0, metadata={"help": "weight of the single-object description loss"})
    noun_weight: float = field(default=0.0, metadata={"help": "weight of a second single-object loss over only "
                                                      "the descriptions alike in all but their noun (its shape)"})


class RegionObjective(DenseObjective):
    """clip-dense's loss + object_weight * object_loss over one object of each picture (+ noun_weight
    * the same loss among the descriptions that differ from the object's own in their noun only)."""

    name = "clip-regions"
    needs = Needs(objects=True)
    options = RegionOptions

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.candidates = descriptions(self.opts.vocabulary)
        self.index = {d: i for i, d in enumerate(self.candidates)}
        self.alike = alike_but_noun(self.candidates)
        self._ids: torch.Tensor | None = None  # the candidates' token ids, made on the first step

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        loss, logs = super().__call__(backend, batch)
        dev = batch["object_pixels"].device
        try:
            target = torch.tensor([self.index[c] for c in batch["object_captions"]], dtype=torch.long, device=dev)
        except KeyError as e:
            raise UnbagError(f"clip-regions: object description {e.args[0]!r} is not one of the "
                             f"{self.opts.vocabulary} world's (--vocabulary)") from None
        objects = backend.encode_images(batch["object_pixels"]).embeds
        if self._ids is None or self._ids.device != dev:
            self._ids = backend.tokenize(self.candidates).to(dev)
        candidates = backend.encode_texts(self._ids).embeds
        term, right = object_loss(objects, candidates, target, backend.logit_scale)
        logs |= {"objects": float(term.detach()), "objects_right": float(right)}
        loss = loss + self.opts.object_weight * term
        if self.opts.noun_weight:
            # the count check weighs an object against the same description with another noun
            nouns, right = object_loss(objects, candidates, target, backend.logit_scale, self.alike.to(dev)[target])
            logs |= {"nouns": float(nouns.detach()), "nouns_right": float(right)}
            loss = loss + self.opts.noun_weight * nouns
        return loss, logs


OBJECTIVES = {RegionObjective.name: RegionObjective}  # registered (training/objectives/__init__.py collects it)
