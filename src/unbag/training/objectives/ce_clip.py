"""CE-CLIP: contrastive loss with hard negatives, a cross-modal rank loss and an intra-modal contrast.

CE-CLIP (Zhang, Awal, Agrawal, CVPR 2024, arXiv 2306.08832; code lezhang7/Enhance-FineGrained).
Every caption t_i has four typed hard negatives t_ik, in this order: relation (its first two nouns
swapped, when it has at least three), attribute (an adjective replaced), object (a noun replaced),
action (a verb replaced), each valid (m_ik = 1) or not. With logits s(x, y) = scale <x, y>,
p_i = s(v_i, t_i), n_ik = s(v_i, t_ik), over the global batch B:

  L_itc = 1/2 [ CE(v_i -> [T; every T_hn of the batch]) + CE(t_i -> V) ]   (invalid negatives stay in)
  L_cmr = 1/(4B) sum_ik m_ik ReLU(theta_k + m_ik n_ik - p_i)
  theta_k <- clamp(mean_i p_i - mean of the valid n_ik, 0, 10)   after each step, detached; 0 at each epoch
  L_imc (imc_form): itc_anchor  CE([p_i, s(t_i, every t_jk)], 0)   (the code of 2024-01-31, "fix bugs")
                    released    CE([s(t_i, every t_jk)], 0)         (the code since 2024-03-27, DeGLA's copy)
                    released_v1 CE([p_i, s(t_i, every t_jk)], 1)     (the code of 2023-06)
  L = L_itc + 0.2 L_cmr + 0.2 L_imc

The intra-modal loss changed four times in the released code and the paper's equation could not be
checked; `itc_anchor` is the only version whose target is each caption's own positive, so it is the
default (docs/training.md). Both later forms target column 0 of every row, i.e. the first negative
of sample 0 (documented, kept for reproduction). Deviations: a theta of a type with no valid
negative in the batch keeps its last value (the code divides by zero); negatives are unbag's rules
(below), not distilroberta's fourth-ranked fill, which needs a model this project cannot download.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ...dist import gather
from ...errors import UnbagError
from ...models.base import Backend
from ...negatives.pos import tag
from ...negatives.swap import replace_word
from ...negatives.typed import ADJ_GROUPS, NOUN_GROUPS, _group_of, _swap, agree_articles, differs
from .base import Needs, Objective

SLOTS = ("relation", "attribute", "object", "action")
IMC_FORMS = ("itc_anchor", "released", "released_v1")
THRESHOLDS = ("mean", "fixed", "max")
# verbs a verb is replaced by, in the tense it has (the code fills a mask with a language model)
VERB_GROUPS = [["riding", "walking", "running", "sitting", "standing", "holding", "eating", "playing", "throwing",
                "flying", "jumping", "looking", "driving", "carrying", "lying", "sleeping", "swimming", "cutting"],
               ["rides", "walks", "runs", "sits", "stands", "holds", "eats", "plays", "throws", "flies", "jumps",
                "looks", "drives", "carries", "sleeps", "swims", "cuts"],
               ["ride", "walk", "run", "sit", "stand", "hold", "eat", "play", "throw", "fly", "jump", "look",
                "drive", "carry", "sleep", "swim", "cut"]]


def _pick(rng: np.random.Generator, xs: list):
    return xs[int(rng.integers(len(xs)))] if xs else None


def _replace_one(caption: str, words: list[str], groups: list[list[str]], rng: np.random.Generator) -> str | None:
    """A random word of `words` replaced by another of its group (the first group when it has none)."""
    if not words:
        return None
    w = _pick(rng, words)
    group = _group_of(w, groups) or groups[0]
    new = _pick(rng, [r for r in group if r != w.lower()])
    out = agree_articles(caption, replace_word(caption, w, new))
    return out if differs(caption, out) else None


def ce_negatives(caption: str, world: dict[str, list[str]] | None, rng: np.random.Generator) -> list[str | None]:
    """CE-CLIP's four negatives of a caption, [relation, attribute, object, action] (None: none).

    Free text: spaCy's tags; relation swaps the first two nouns as whole words when there are three
    or more (the code edits substrings, so 'man' changes inside 'woman'; that is not reproduced).
    A world's caption: its exact edits (negatives/typed.py), which never name a held-out combination;
    the world has no verbs, so its action slot is empty."""
    if world is not None:
        return [_pick(rng, world["swap_nouns"]), _pick(rng, world["replace_adjectives"]),
                _pick(rng, world["replace_nouns"]), None]
    tagged = tag(caption)
    nouns = [w for w, p in tagged if p == "NOUN"]
    relation = None
    if len(nouns) > 2 and nouns[0].lower() != nouns[1].lower():
        relation = _swap(caption, nouns[0], nouns[1])
    adjs = [w for w, p in tagged if p == "ADJ"]
    verbs = [w for w, p in tagged if p == "VERB"]
    return [relation if relation and differs(caption, relation) else None,
            _replace_one(caption, adjs, ADJ_GROUPS, rng), _replace_one(caption, nouns, NOUN_GROUPS, rng),
            _replace_one(caption, verbs, VERB_GROUPS, rng)]


def itc_hn(v: torch.Tensor, t: torch.Tensor, tn: torch.Tensor, scale: torch.Tensor,
           valid: torch.Tensor | None = None) -> torch.Tensor:
    """v, t [B, d], tn [B, K, d] unit; image->text over [T; all B*K negatives], text->image over V;
    `valid` given: invalid negatives masked out (the code keeps them)."""
    b = len(v)
    target = torch.arange(b, device=v.device)
    neg = scale * v @ tn.reshape(-1, tn.shape[-1]).T
    if valid is not None:
        neg = neg.masked_fill(~valid.reshape(1, -1), float("-inf"))
    i2t = torch.cat([scale * v @ t.T, neg], 1)
    return (F.cross_entropy(i2t, target) + F.cross_entropy(scale * t @ v.T, target)) / 2


def cmr_loss(p: torch.Tensor, n: torch.Tensor, valid: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """p [B] positive logits, n [B, K] negative logits, valid [B, K], theta [K]: the mean over all
    B*K cells of m ReLU(theta_k + m n - p) (invalid cells count as 0 in the mean)."""
    m = valid.to(n.dtype)
    return (m * F.relu(theta[None] + n * m - p[:, None])).mean()


def next_theta(p: torch.Tensor, n: torch.Tensor, valid: torch.Tensor, theta: torch.Tensor, kind: str = "mean",
               upper: float = 10.0, fixed: float = 2.0) -> torch.Tensor:
    """The thresholds for the next step: `mean` mean_i p_i - the mean of each type's valid logits
    (cells whose masked logit is exactly 0 do not count, as in the code); `max` max_i(p_i m_ik -
    m n_ik) / 5; `fixed` the constant; clamped to [0, upper]. A type with no valid cell keeps its theta."""
    with torch.no_grad():
        m = valid.to(n.dtype)
        nm = n * m
        if kind == "fixed":
            return torch.full_like(theta, fixed)
        if kind == "max":
            new = (p[:, None] * m - nm).amax(0) / 5
        elif kind == "mean":
            nz = (nm != 0).to(n.dtype)
            count = nz.sum(0)
            new = p.mean() - nm.sum(0) / count.clamp(min=1)
            new = torch.where(count > 0, new, theta)
        else:
            raise ValueError(f"threshold kind {kind!r}: one of {THRESHOLDS}")
        return new.clamp(0, upper)


def imc_loss(p: torch.Tensor, tt: torch.Tensor, form: str = "itc_anchor") -> torch.Tensor:
    """p [B] positive image-text logits, tt [B, B*K] each caption's logits against every negative of
    the batch: the intra-modal term of `form`."""
    if form == "released":
        logits, target = tt, 0
    elif form in ("itc_anchor", "released_v1"):
        logits, target = torch.cat([p[:, None], tt], 1), (0 if form == "itc_anchor" else 1)
    else:
        raise ValueError(f"imc_form {form!r}: one of {IMC_FORMS}")
    return F.cross_entropy(logits, torch.full((len(tt),), target, dtype=torch.long, device=tt.device))


@dataclass
class CEOptions:
    lambda_cmr: float = field(default=0.2, metadata={"help": "weight of the cross-modal rank loss"})
    lambda_imc: float = field(default=0.2, metadata={"help": "weight of the intra-modal contrast"})
    imc_form: str = field(default="itc_anchor", metadata={
        "help": "which released version of the intra-modal loss: itc_anchor (2024-01, each caption's "
                "own positive against every negative), released (the code since 2024-03, DeGLA's copy) "
                "or released_v1 (2023-06)"})
    cmr_threshold: str = field(default="mean", metadata={"help": "the rank loss's thresholds: mean (adaptive), "
                                                             "fixed or max"})
    cmr_threshold_ub: float = field(default=10.0, metadata={"help": "upper bound of an adaptive threshold"})
    cmr_fixed_threshold: float = field(default=2.0, metadata={"help": "the threshold of --cmr-threshold fixed"})
    itc_mask_invalid: bool = field(default=False, metadata={
        "help": "mask invalid negatives out of the contrastive loss (the code keeps them as easy negatives)"})

    def __post_init__(self) -> None:
        if self.imc_form not in IMC_FORMS:
            raise UnbagError(f"imc_form {self.imc_form!r}: one of {IMC_FORMS}")
        if self.cmr_threshold not in THRESHOLDS:
            raise UnbagError(f"cmr_threshold {self.cmr_threshold!r}: one of {THRESHOLDS}")


class CEObjective(Objective):
    name = "ce-clip"
    needs = Needs(slots=ce_negatives)
    options = CEOptions
    # the 5-epoch script of 2024-02 (4 GPUs x 128): AdamW (0.9, 0.98, 1e-6), wd 0.1, 50 warm-up steps
    defaults = dict(lr=5e-6, batch_size=512, warmup=50, eps=1e-6, weight_decay=0.1)

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.theta = torch.zeros(len(SLOTS))
        self.epoch = 0

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        o = self.opts
        b = len(batch["pixels"])
        k = batch["typed_ids"].shape[0] // b
        v = gather(F.normalize(backend.encode_images(batch["pixels"]).embeds, dim=-1))
        text = F.normalize(backend.encode_texts(torch.cat([batch["ids"], batch["typed_ids"]])).embeds, dim=-1)
        t, tn = gather(text[:b]), gather(text[b:].view(b, k, -1))
        valid = gather(batch["typed_valid"].to(v.device))
        scale = backend.logit_scale
        if batch.get("epoch", 0) != self.epoch:  # the code starts every epoch from theta = 0
            self.theta, self.epoch = torch.zeros(len(SLOTS)), batch.get("epoch", 0)
        theta = self.theta.to(v.device, v.dtype)
        p = scale * (v * t).sum(-1)
        n = scale * torch.einsum("bd,bkd->bk", v, tn)
        l_itc = itc_hn(v, t, tn, scale, valid if o.itc_mask_invalid else None)
        l_cmr = cmr_loss(p, n, valid, theta)
        l_imc = imc_loss(p, scale * t @ tn.reshape(-1, tn.shape[-1]).T, o.imc_form)
        self.theta = next_theta(p.float(), n.float(), valid, theta.float(), o.cmr_threshold, o.cmr_threshold_ub,
                                o.cmr_fixed_threshold).cpu()
        loss = l_itc + o.lambda_cmr * l_cmr + o.lambda_imc * l_imc
        return loss, {"logit_scale": float(scale.detach()), "itc": float(l_itc.detach()),
                      "cmr": float(l_cmr.detach()), "imc": float(l_imc.detach()), "negatives": int(valid.sum()),
                      **{f"theta_{s}": float(x) for s, x in zip(SLOTS, self.theta)}}

    def state(self) -> dict:
        return {"theta": self.theta.tolist(), "epoch": self.epoch}

    def load_state(self, state: dict) -> None:
        if state:
            self.theta, self.epoch = torch.tensor(state["theta"], dtype=torch.float32), int(state["epoch"])


OBJECTIVES = {CEObjective.name: CEObjective}  # registered (training/objectives/__init__.py collects it)
