"""GroupMatch: a k x k group is right when its true pairing beats every other pairing in total score.

Test-Time Matching (Zhu, Zhang, Tang; arXiv 2510.07632). For a group of images I_1..I_k and
captions C_1..C_k (C_i belongs to I_i) with scores S[i][j] = s(I_i, C_j), GroupMatch is 1 when

    sum_i S[i][i]  >  sum_i S[i][pi(i)]   for every permutation pi other than the identity,

i.e. the identity is the unique best one-to-one assignment. For 2 x 2 this is S00 + S11 > S01 + S10
(the paper's code). It is implied by Winoground's group score (sum its two text inequalities), not
conversely, and is unchanged by adding a constant to a row or a column of S. Chance is 1/k!
(1/2 for 2 x 2, where the group score's chance is 1/6). unbag's rule is strict: a pairing that ties
the true one makes the group wrong, and is counted under 'tie/groupmatch'.
"""
from __future__ import annotations

import itertools

import torch

MAX_K = 8  # 8! = 40,320 pairings per group; a larger group is refused, not approximated


def group_match(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-item GroupMatch of k x k groups, scores [items, k, k] (rows images, columns captions)."""
    if scores.ndim != 3 or scores.shape[1] != scores.shape[2] or scores.shape[1] < 2:
        raise ValueError(f"group_match needs scores [items, k, k] with k >= 2, got {tuple(scores.shape)}")
    k = scores.shape[1]
    if k > MAX_K:
        raise ValueError(f"group_match enumerates every pairing: k = {k} is over {MAX_K}")
    s = scores.double()  # sums of floats: exact enough that equal pairings stay equal
    if k == 2:
        true, other = s[:, 0, 0] + s[:, 1, 1], (s[:, 0, 1] + s[:, 1, 0])[:, None]
    else:
        perms = torch.tensor(list(itertools.permutations(range(k)))[1:])  # the identity is first
        rows = torch.arange(k)
        true = s[:, rows, rows].sum(-1)
        other = s[:, rows[None, :].expand_as(perms), perms].sum(-1)  # [items, k! - 1]
    best = other.max(1).values
    return {"groupmatch": (true > best).float(), "tie/groupmatch": true == best}


def match_margin(scores: torch.Tensor) -> torch.Tensor:
    """2 x 2 groups [items, 2, 2] -> S00 + S11 - S01 - S10: how far the true pairing beats the swapped one."""
    if scores.ndim != 3 or scores.shape[1:] != (2, 2):
        raise ValueError(f"match_margin needs scores [items, 2, 2], got {tuple(scores.shape)}")
    return scores[:, 0, 0] + scores[:, 1, 1] - scores[:, 0, 1] - scores[:, 1, 0]


__all__ = ["MAX_K", "group_match", "match_margin"]
