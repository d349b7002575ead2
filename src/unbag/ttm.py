"""Protocol `ttm`: Test-Time Matching, which fine-tunes the model on the benchmark it then scores.

Test-Time Matching (Zhu, Zhang, Tang; arXiv 2510.07632; code yinglunz/test-time-matching). Starting
from a copy of the model (the user's is never changed), for rounds t = 0..T-1 with a threshold tau_t
falling linearly from 2 to 0 (in logits, scale x cosine):
  1. score every item with the current model; a 2 x 2 group whose matching margin
     m = S00 + S11 - S01 - S10 has |m| >= tau_t gets the pseudo-pairing it prefers (identity when
     m > 0, swapped when m < 0); a 1 x K item whose best caption leads the next by >= tau_t gets that
     caption; the rest are skipped this round. An exact tie (m = 0) is always skipped: no label
     decides anything (the released code would pick the identity, the true pairing);
  2. train every parameter for `epochs` epochs on those pairs, batches of `batch_groups` groups,
     with the model's own symmetric contrastive loss; AdamW kept across rounds, the learning rate
     restarting at lr x 0.95^t and falling by cosine to a tenth of that.
The items are then scored by the adapted model, as the global protocol scores them.

It is transductive: it learns from the very items it is scored on (their grouping, never their
labels). Its results say so (`"transductive": true`), and reports and `unbag suite` label its
column "transductive"; it is never the same column as a frozen model's. Defaults: the released
`ttm.sh` (10 rounds of 30 epochs, 50 groups a batch, lr 1e-5, weight decay 0.05, seed 42); options
as `ttm:rounds=2,epochs=5`. Items of several shapes (1 x K beside 2 x 2) adapt one shape at a time.
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
import torch.nn.functional as F

from . import dist
from .benchmarks.base import Benchmark
from .errors import UnbagError
from .metrics.groupmatch import match_margin
from .models.base import Backend
from .scoring import Protocol
from .scoring.encode import autocast, pixels_of


@dataclass
class TTMConfig:
    """Test-Time Matching's settings (the released ttm.sh)."""
    rounds: int = 10
    epochs: int = 30
    batch_groups: int = 50
    threshold_start: float = 2.0
    threshold_end: float = 0.0
    lr: float = 1e-5
    lr_restart: float = 0.95
    min_lr_factor: float = 0.1
    weight_decay: float = 0.05
    seed: int = 42

    @classmethod
    def parse(cls, arg: str) -> "TTMConfig":
        """'rounds=2,epochs=5' -> a config (the defaults for '')."""
        kinds = {f.name: f.type for f in fields(cls)}
        given = {}
        for part in filter(None, arg.split(",")):
            key, eq, value = part.partition("=")
            if not eq or key.strip() not in kinds:
                raise UnbagError(f"ttm:{arg}: {part!r} is not KEY=VALUE with KEY one of {', '.join(kinds)}")
            try:
                given[key.strip()] = (int if kinds[key.strip()] in (int, "int") else float)(value)
            except ValueError:
                raise UnbagError(f"ttm:{arg}: {key}={value!r} is not a number") from None
        cfg = cls(**given)
        if cfg.rounds < 1 or cfg.epochs < 1 or cfg.batch_groups < 1:
            raise UnbagError(f"ttm:{arg}: rounds, epochs and batch_groups must be at least 1")
        return cfg

    def thresholds(self) -> list[float]:
        return np.linspace(self.threshold_start, self.threshold_end, self.rounds).tolist()


def pseudo_pairs(scores: torch.Tensor, tau: float) -> list[tuple[int, list[tuple[int, int]]]]:
    """Items [n, images, captions] of logits -> [(item, [(image, caption), ...])] of the selected ones."""
    n, k_img, k_cap = scores.shape
    out = []
    if (k_img, k_cap) == (2, 2):
        m = match_margin(scores)
        for i, v in enumerate(m.tolist()):
            if v != 0 and abs(v) >= tau:
                out.append((i, [(0, 0), (1, 1)] if v > 0 else [(0, 1), (1, 0)]))
    elif k_img == 1 and k_cap >= 2:
        top = scores[:, 0].topk(2, dim=1)
        for i, (vals, idx) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
            if vals[0] > vals[1] and vals[0] - vals[1] >= tau:
                out.append((i, [(0, idx[0])]))
    return out


def _embed(backend: Backend, pixels: torch.Tensor, ids: torch.Tensor, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad(), autocast(backend):
        img = torch.cat([backend.encode_images(pixels[s:s + batch_size].to(backend.device)).embeds.float()
                         for s in range(0, len(pixels), batch_size)])
        txt = torch.cat([backend.encode_texts(ids[s:s + batch_size].to(backend.device)).embeds.float()
                         for s in range(0, len(ids), batch_size)])
    return F.normalize(img, dim=-1).cpu(), F.normalize(txt, dim=-1).cpu()


def adapt_and_score(backend: Backend, bench: Benchmark, cfg: TTMConfig, batch_size: int = 256,
                    progress: bool = False) -> tuple[torch.Tensor, dict]:
    """(scores [items, images, captions] of the adapted copy, what the adaptation did)."""
    if dist.world_size() > 1:
        raise UnbagError("protocol ttm adapts on every item of a benchmark together: run it in one process, "
                         "not under torchrun")
    refs, at_img, wheres = bench.items.images()
    texts, at_txt = bench.items.captions()
    pixels = pixels_of(backend, refs, wheres, bench.image_size)
    ids = backend.tokenize(texts)
    at_img, at_txt = torch.from_numpy(at_img), torch.from_numpy(at_txt)
    model = copy.deepcopy(backend.model)  # every benchmark starts from the model as given
    mine = copy.copy(backend)
    mine.model = model
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                            betas=(0.9, 0.999))
    record = {"thresholds": cfg.thresholds(), "groups_per_round": [], "pairs_trained": 0}

    def logits() -> torch.Tensor:
        model.eval()
        img, txt = _embed(mine, pixels, ids, batch_size)
        scale = float(mine.logit_scale.detach())
        return scale * torch.einsum("nid,ncd->nic", img[at_img], txt[at_txt])

    for t, tau in enumerate(cfg.thresholds()):
        chosen = pseudo_pairs(logits(), tau)
        record["groups_per_round"].append(len(chosen))
        if not chosen:
            continue
        steps = cfg.epochs * math.ceil(len(chosen) / cfg.batch_groups)
        lr0 = cfg.lr * cfg.lr_restart ** t
        for g in opt.param_groups:
            g["lr"] = lr0
        model.train()
        step = 0
        for _ in range(cfg.epochs):
            order = torch.randperm(len(chosen), generator=gen).tolist()
            for s in range(0, len(order), cfg.batch_groups):
                pairs = [(it, i, c) for j in order[s:s + cfg.batch_groups] for it, pc in [chosen[j]] for i, c in pc]
                im = at_img[[p[0] for p in pairs], [p[1] for p in pairs]]
                tx = at_txt[[p[0] for p in pairs], [p[2] for p in pairs]]
                with autocast(mine):
                    u = mine.encode_images(pixels[im].to(mine.device)).embeds.float()
                    v = mine.encode_texts(ids[tx].to(mine.device)).embeds.float()
                u, v = F.normalize(u, dim=-1), F.normalize(v, dim=-1)
                lg = mine.logit_scale * u @ v.T
                target = torch.arange(len(pairs), device=lg.device)
                loss = (F.cross_entropy(lg, target) + F.cross_entropy(lg.T, target)) / 2
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                step += 1
                frac = step / steps  # cosine from lr0 to min_lr_factor x lr0 over the round
                for g in opt.param_groups:
                    g["lr"] = lr0 * (cfg.min_lr_factor + (1 - cfg.min_lr_factor) * 0.5 * (1 + math.cos(math.pi * frac)))
                record["pairs_trained"] += len(pairs)
    scale = float(mine.logit_scale.detach())
    return logits() / scale, record  # cosines, as the global protocol scores


def _ttm(arg: str, options: dict, bench: "str | Benchmark"):
    cfg = TTMConfig.parse(arg)
    recorded = {"transductive": True, "ttm": asdict(cfg), "adaptations": []}  # one per shape of items

    def score(backend: Backend, b: Benchmark, batch_size: int = 256, progress: bool = False) -> torch.Tensor:
        scores, rec = adapt_and_score(backend, b, cfg, batch_size, progress)
        recorded["adaptations"].append(rec)
        return scores

    return score, recorded


PROTOCOLS: dict[str, Protocol] = {  # `ttm` alone: the defaults
    "ttm:": Protocol("ttm[:KEY=VALUE,...] (Test-Time Matching: adapts the model on the scored items; transductive)",
                     _ttm, recipe="paper", transductive=True, bare=True),
}
