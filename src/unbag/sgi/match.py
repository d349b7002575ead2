"""SGI's matching of segments to regions and its two structure checks (counts, geometry)."""
from __future__ import annotations

import torch

from . import segments as seg
from .config import SGIConfig
from .encode import ImageRegions, box_of


def aggregate(sim: torch.Tensor, allowed: torch.Tensor, assign: str) -> tuple[float, list[int]]:
    """(mean over segments of the matched similarity, chosen region per segment) for S [K, R]."""
    s = sim.masked_fill(~allowed, float("-inf"))
    best, choice = s.max(dim=1)
    if assign == "hungarian" and sim.shape[0] > 1:
        from scipy.optimize import linear_sum_assignment

        cost = (-s).clamp(max=1e6).numpy()  # disallowed pairs get a prohibitive cost
        rows, cols = linear_sum_assignment(cost)
        # segments left without a region (more segments than regions) keep their best match
        for r, c in zip(rows, cols):
            if allowed[r, c]:
                best[r], choice[r] = sim[r, c], c
    return float(best.mean()), choice.tolist()


def allowed_pairs(segs: list[seg.Segment], r: ImageRegions) -> torch.Tensor:
    """match="kind": which regions each segment may take [K, R]. An object segment takes single
    regions; a group segment that says how many ("three ...") takes unions of that many regions;
    everything else any region. A rule that would leave a segment nothing falls back to any region."""
    sizes = torch.tensor([len(reg) for reg in r.regions])
    rows = []
    for s in segs:
        want = region_count(s)
        row = sizes == want if want else torch.ones_like(sizes, dtype=torch.bool)
        rows.append(row if row.any() else torch.ones_like(sizes, dtype=torch.bool))
    return torch.stack(rows)


def region_count(s: seg.Segment) -> int:
    """How many boxes a region must join to match segment `s` under match="kind" (0: any region)."""
    return 1 if s.kind == "object" else (s.count or 0 if s.kind == "group" else 0)


def holds(predicate: str, a, b) -> bool:
    """Whether `predicate` holds between regions a (subject) and b (object): left / right / above /
    below compare centres; front / behind compare bottom edges (nearer the camera reaches lower)."""
    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = box_of(a), box_of(b)
    acx, acy, bcx, bcy = (ax0 + ax1) / 2, (ay0 + ay1) / 2, (bx0 + bx1) / 2, (by0 + by1) / 2
    return {"left": acx < bcx, "right": acx > bcx, "above": acy < bcy, "below": acy > bcy,
            "front": ay1 > by1, "behind": ay1 < by1}[predicate]


def geometry(segs: list[seg.Segment], chosen: list) -> list[float]:
    """Per segment: +1 / -1 when a relation's spatial predicate holds / fails between the regions
    chosen for its subject and object, 0 for everything else."""
    out = []
    for s in segs:
        if s.kind != "relation" or s.parts is None or s.predicate is None:
            out.append(0.0)
            continue
        out.append(1.0 if holds(s.predicate, chosen[s.parts[0]], chosen[s.parts[1]]) else -1.0)
    return out


def counts_things(segs: list[seg.Segment]) -> bool:
    """Whether a caption counts: some phrase names two or more things ("three red cubes")."""
    return any(s.kind == "group" and (s.count or 0) >= 2 for s in segs)


def count_check(segs: list[seg.Segment], r: ImageRegions, desc: torch.Tensor, fit: bool = False) -> list[float]:
    """Per segment of a caption that counts ("three red cubes and one blue cone"): +1 / -1 when the
    phrase names as many things as there are single regions that fit its description ("a red cube")
    best among the caption's counted phrases, 0 for phrases without a count. Each description's
    cosines are centred over the image's single regions first (its mean subtracted), so a
    description the encoder scores high everywhere does not claim every region. With `fit`, a
    region counts for its best description only where its centred cosine is positive (it fits that
    description better than the description's average region), so a region of something no phrase
    counts (another object in the scene) counts for none. No check when no phrase names two or more."""
    out = [0.0] * len(segs)
    if not counts_things(segs):
        return out
    counted = [k for k, s in enumerate(segs) if s.kind in ("object", "group") and s.count]
    singles = [j for j, reg in enumerate(r.regions) if len(reg) == 1]
    if len(singles) < 2 or len(counted) < 2:
        return out
    sim = desc[counted] @ r.emb[singles].T  # [counted, singles]
    # centred, not standardised: dividing by the spread would blow a description that barely
    # separates the regions (the text "a large sphere" on spheres and cylinders alike) up to the
    # weight of one that separates them clearly
    top, best = (sim - sim.mean(1, keepdim=True)).max(0)
    if fit:
        best = torch.where(top > 0, best, -1)
    for i, k in enumerate(counted):
        out[k] = 1.0 if int((best == i).sum()) == segs[k].count else -1.0
    return out


def checkable(segs: list[seg.Segment], cfg: SGIConfig) -> bool:
    """Whether the count or geometry check can add anything to a caption with these segments."""
    counts = cfg.counts != "off" and counts_things(segs)
    return counts or (cfg.relations == "geometry" and any(s.kind == "relation" and s.predicate for s in segs))
