"""FSC-CLIP: CLIP plus global and local hard-negative losses, each through Selective Calibrated Regularization.

FSC-CLIP (Oh et al., EMNLP 2024, arXiv 2410.05210; code ytaek-oh/fsc-clip), following the released
code. Each caption has three typed negatives (a NegCLIP-style swap, a replacement, a bigram
shuffle), any of which may be missing. With logit scale s:

  L_clip   the symmetric InfoNCE over the global batch's positives (negatives are not in it)
  z_i      = s [<v_i,t_i>, <v_i,t_i1>, <v_i,t_i2>, <v_i,t_i3>]        (a missing negative: logit 0)
  z^loc_i  = [S_loc(I_i,T_i), S_loc(I_i,T_i1..3)]                     (a missing negative: 0)
  S_loc(I,T) = logsumexp over T's tokens t (start token and padding out) of s <xhat_t, t/|t|>,
           xhat_t = normalize(sum_p w_tp x_p), w_t = minmax_p(<t, x_p>) / its sum (detached), the
           image's projected patch tokens x_p and the caption's projected tokens t
  SCR(z)   = sum_c y_c [-(1 - p_c)^gamma log p_c], p = softmax(z) over all four columns,
           y_0 = 1 - eps + eps/K_i, y_k = eps/K_i for a present negative, 0 for a missing one
           (K_i = 1 + present negatives), gamma = 2, eps = 0.02; rows with no negative drop out
  L = L_clip + 0.5 mean_i SCR(z_i) + 0.2 mean_i SCR(z^loc_i)

Trained with LoRA (rank 4, alpha 1, training/lora.py) at lr 5e-5 as the paper's headline run;
`--lora-rank 0` fine-tunes every weight (the paper's lr there: 5e-6). Deviations: the hard-negative
terms average over the global batch (the code averages per GPU; the same when every GPU holds as
many rows with a negative), the min-max normalisation has an epsilon (the code gives NaN when a
token's products are all equal), and the negatives are unbag's rules (below) where the code uses
WordNet co-hyponyms and a scene-graph parser.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ...dist import gather
from ...models.base import Backend
from ...negatives.swap import swap_within
from ...negatives.typed import RuleGenerator
from .. import lora
from .base import Needs, Objective
from .clip import clip_loss

SLOTS = ("swap", "replace", "shuffle")
EPS = 1e-6  # min-max normalisation's guard


def bigram_shuffle(caption: str, rng: np.random.Generator, tries: int = 10) -> str | None:
    """The caption's words in consecutive pairs, the pairs shuffled, until it differs (FSC-CLIP's
    `shuffle_ngrams(n=2)`); a trailing period or comma stays at the end. None if it never differs."""
    body = caption.rstrip()
    end = ""
    while body and body[-1] in ".,!?;":
        body, end = body[:-1], body[-1] + end
    words = body.split()
    grams = [words[i:i + 2] for i in range(0, len(words), 2)]
    for _ in range(tries):
        order = rng.permutation(len(grams))
        out = " ".join(w for i in order for w in grams[int(i)])
        if out.lower() != body.lower():
            return out + end
    return None


def fsc_negatives(caption: str, world: dict[str, list[str]] | None, rng: np.random.Generator) -> list[str | None]:
    """FSC-CLIP's three negatives of a caption, [swap, replace, shuffle] (None: its rule does not apply).

    swap: two words of one POS class exchanged (NegCLIP's rule, negatives/swap.py); on a world's
    caption one of its exact attribute or shape swaps. replace: a word replaced from unbag's word
    groups (the code: WordNet antonyms and co-hyponyms); on a world's caption an exact replacement
    that names no held-out combination. shuffle: `bigram_shuffle`."""
    def pick(xs):
        return xs[int(rng.integers(len(xs)))] if xs else None
    if world is not None:
        swap = pick(world["swap_adjectives"] + world["swap_nouns"])
        replace = pick(world["replace_adjectives"] + world["replace_nouns"])
    else:
        swap = swap_within(caption, rng)
        c = RuleGenerator().candidates(caption)
        replace = pick(c["replace_adjectives"] + c["replace_nouns"])
    return [swap, replace, bigram_shuffle(caption, rng)]


def scr_loss(z: torch.Tensor, valid: torch.Tensor, gamma: float = 2.0, eps: float = 0.02) -> torch.Tensor:
    """Selective Calibrated Regularization: focal loss on label-smoothed targets over the present
    classes. z [R, 1+K] (column 0 the positive), valid [R, K]; the mean over rows with a negative."""
    m = valid.to(z.dtype)
    k = 1 + m.sum(1, keepdim=True)
    y = torch.cat([1 - eps + eps / k, eps / k * m], 1)
    logp = F.log_softmax(z.float(), 1)
    per = (y * -(1 - logp.exp()) ** gamma * logp).sum(1)
    rows = valid.any(1)
    return per[rows].mean() if rows.any() else z.sum() * 0


def local_cosines(patches: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """patches [B, P, d] and tokens [B, C, L, d] (C captions per image, projected, not unit) ->
    [B, C, L]: each token's cosine with its text-aligned visual patch (min-max weights, detached)."""
    a = torch.einsum("bcld,bpd->bclp", tokens, patches).detach()
    lo, hi = a.amin(-1, keepdim=True), a.amax(-1, keepdim=True)
    w = (a - lo) / (hi - lo + EPS)
    w = w / w.sum(-1, keepdim=True).clamp(min=EPS)
    xhat = F.normalize(torch.einsum("bclp,bpd->bcld", w, patches), dim=-1)
    return (xhat * F.normalize(tokens, dim=-1)).sum(-1)


def local_scores(cos: torch.Tensor, mask: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """[B, C, L] token cosines and their mask -> S_loc [B, C] = logsumexp over tokens of scale cos."""
    return (scale * cos).masked_fill(~mask, float("-inf")).logsumexp(-1)


@dataclass
class FSCOptions:
    lambda_global: float = field(default=0.5, metadata={"help": "weight of the global hard-negative loss"})
    lambda_local: float = field(default=0.2, metadata={"help": "weight of the local (token-patch) hard-negative loss"})
    focal_gamma: float = field(default=2.0, metadata={"help": "SCR's focal exponent"})
    label_smoothing: float = field(default=0.02, metadata={"help": "SCR's label smoothing over present classes"})
    lora_rank: int = field(default=4, metadata={"help": "LoRA rank (0: fine-tune every weight)"})
    lora_alpha: float = field(default=1.0, metadata={"help": "LoRA's alpha (the update is scaled by alpha/rank)"})
    lora_zero_init_attn: bool = field(default=False, metadata={
        "help": "start the attention input projection's LoRA at zero (the code draws both factors)"})


class FSCObjective(Objective):
    name = "fsc-clip"
    needs = Needs(slots=fsc_negatives)
    options = FSCOptions
    # the README's COCO run with LoRA: 1 GPU x 256, 50 warm-up steps, AdamW (0.9, 0.98, 1e-6), wd 0.1;
    # LoRA's 10x learning rate (full fine-tuning: 5e-6)
    defaults = dict(lr=5e-5, batch_size=256, warmup=50, eps=1e-6, weight_decay=0.1)

    def prepare(self, model: torch.nn.Module) -> dict[str, int] | None:
        o = self.opts
        return lora.apply(model, o.lora_rank, o.lora_alpha, o.lora_zero_init_attn) if o.lora_rank else None

    def finish(self, model: torch.nn.Module) -> None:
        lora.merge(model)

    def __call__(self, backend: Backend, batch: dict) -> tuple[torch.Tensor, dict]:
        o = self.opts
        b = len(batch["pixels"])
        k = batch["typed_ids"].shape[0] // b
        img = backend.encode_images(batch["pixels"], tokens=True)
        txt = backend.encode_texts(torch.cat([batch["ids"], batch["typed_ids"]]), tokens=True)
        valid = batch["typed_valid"].to(img.embeds.device)
        scale = backend.logit_scale
        v, t = F.normalize(img.embeds, dim=-1), F.normalize(txt.embeds, dim=-1)
        l_clip = clip_loss(gather(v), gather(t[:b]), scale)
        # own captions of each image: [positive, its K negatives]; a missing negative is a zero vector
        own = torch.cat([t[:b, None], t[b:].view(b, k, -1) * valid[..., None]], 1)
        cos_g = torch.einsum("bd,bcd->bc", v, own)
        mask = txt.mask.clone()
        mask[:, 0] = False  # the start token is not scored (padding is not either)
        tokens = torch.cat([txt.tokens[:b, None], txt.tokens[b:].view(b, k, *txt.tokens.shape[1:])], 1)
        cos_l = local_cosines(img.patches, tokens)
        tok_mask = torch.cat([mask[:b, None], mask[b:].view(b, k, -1)], 1)
        # gathered before the scale enters, so every process sees the whole batch's dependence on it
        cos_g, cos_l, tok_mask, valid = gather(cos_g), gather(cos_l), gather(tok_mask), gather(valid)
        present = torch.cat([torch.ones_like(valid[:, :1]), valid], 1)
        z_g = scale * cos_g
        z_l = local_scores(cos_l, tok_mask, scale).masked_fill(~present, 0.0)
        l_g = scr_loss(z_g, valid, o.focal_gamma, o.label_smoothing)
        l_l = scr_loss(z_l, valid, o.focal_gamma, o.label_smoothing)
        loss = l_clip + o.lambda_global * l_g + o.lambda_local * l_l
        return loss, {"logit_scale": float(scale.detach()), "clip": float(l_clip.detach()),
                      "neg_global": float(l_g.detach()), "neg_local": float(l_l.detach()),
                      "negatives": int(valid.sum())}


OBJECTIVES = {FSCObjective.name: FSCObjective}  # registered (training/objectives/__init__.py collects it)
