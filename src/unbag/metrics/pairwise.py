"""Single-image metrics on scores [items, 1, captions], strict `>` (a tie is wrong and counted).

- pairwise: the first caption beats every other one (SugarCrepe, VALSE, ARO: accuracy; ARO
  COCO/Flickr-Order: precision@1 of the original among 5).
- order (ARO COCO/Flickr-Order): captions [original, 4 perturbations]; `acc` is unbag's strict
  rule, in which a perturbation identical to the original is no negative, and `acc_official` is
  ARO's code: the argmax over [original, p1..p4] is the original, so a tie counts as right.
- itt (SugarCrepe++ image-to-text): captions [P1, P2, N]; s(I,P1) > s(I,N) and s(I,P2) > s(I,N).
"""
from __future__ import annotations

import torch


def pairwise(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    if scores.ndim != 3 or scores.shape[1] != 1 or scores.shape[2] < 2:
        raise ValueError(f"pairwise needs scores [items, 1, >=2], got {tuple(scores.shape)}")
    s = scores[:, 0]
    others = s[:, 1:]
    return {"acc": (s[:, :1] > others).all(1).float(), "tie/acc": (s[:, :1] == others).any(1)}


def order(scores: torch.Tensor, same: torch.Tensor) -> dict[str, torch.Tensor]:
    """ARO Order on scores [items, 1, 5] (original first); `same` [items, 4]: perturbation == original."""
    if scores.ndim != 3 or scores.shape[1] != 1 or same.shape != (scores.shape[0], scores.shape[2] - 1):
        raise ValueError(f"order needs scores [items, 1, 1 + P] and same [items, P], got {tuple(scores.shape)} "
                         f"and {tuple(same.shape)}")
    s = scores[:, 0]
    orig, pert = s[:, :1], s[:, 1:]
    tie = orig == pert
    return {"acc": ((orig > pert) | same).all(1).float(), "tie/acc": (tie & ~same).any(1),
            # np.argmax returns the first maximum, and ARO puts the original first
            "acc_official": (orig >= pert).all(1).float(), "tie/acc_official": tie.any(1)}


def itt(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    if scores.ndim != 3 or scores.shape[1:] != (1, 3):
        raise ValueError(f"itt needs scores [items, 1, 3] (P1, P2, N), got {tuple(scores.shape)}")
    s = scores[:, 0]
    ok = (s[:, 0] > s[:, 2]) & (s[:, 1] > s[:, 2])
    tie = (s[:, 0] == s[:, 2]) | (s[:, 1] == s[:, 2])
    return {"itt": ok.float(), "tie/itt": tie}


def tot(p1: torch.Tensor, p2: torch.Tensor, n: torch.Tensor) -> dict[str, torch.Tensor]:
    """SugarCrepe++ text-only: unit text embeddings [items, d]; s(P1,P2) > s(P1,N) and s(P1,P2) > s(P2,N)."""
    pp, p1n, p2n = (p1 * p2).sum(-1), (p1 * n).sum(-1), (p2 * n).sum(-1)
    return {"tot": ((pp > p1n) & (pp > p2n)).float(), "tie/tot": (pp == p1n) | (pp == p2n)}
