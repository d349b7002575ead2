"""MMVP-VLM (Tong et al., CVPR 2024 "Eyes Wide Shut", arXiv 2401.06209) in its official layout
(docs/benchmarks.md).

mmvp-vlm:DIR   DIR holds Questions.csv (Question ID, Type, Statement) and
               "MLLM_VLM Images/<Type>/<Question ID>.jpg"; two consecutive rows form a pair (odd id
               first), both images from the first row's Type folder. Captions are 'a photo of ' +
               Statement, as the official script builds them.

Official rule (scripts/evaluate_vlm.py): per caption, the image whose softmax probability
exceeds 0.5 is chosen; both must be right. That is Winoground's image score, except that caption
2's choice defaults to its own image on a tie (`image_official`); `image` is strict. The "MMVP
Average" is the mean over the nine patterns, `macro/image_official`.
"""
from __future__ import annotations

import csv
from pathlib import Path

import torch

from ..errors import UnbagError
from ..utils import opened
from .base import Benchmark, Item
from .common import Dropped, release_dir, unique_ids
from .kinds import Kind, Summary
from .shapes import winoground

IMAGES = "MLLM_VLM Images"
PROMPT = "a photo of "


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """Winoground's text, image and group, plus the official script's asymmetric image score."""
    out = winoground(scores)
    s = scores
    out["image_official"] = ((s[:, 0, 0] > s[:, 1, 0]) & (s[:, 1, 1] >= s[:, 0, 1])).float()
    out["tie/image_official"] = (s[:, 0, 0] == s[:, 1, 0]) | (s[:, 1, 1] == s[:, 0, 1])
    return out


def load(root: str | Path) -> Benchmark:
    """MMVP-VLM's 135 pairs."""
    root = release_dir(Path(root), ("Questions.csv",), ("MMVP_VLM",))  # the dataset's folder, or a clone holding it
    f = root / "Questions.csv"
    if not f.is_file():
        raise UnbagError(f"{f}: file not found (see docs/benchmarks.md for the expected layout)")
    with open(opened(f), newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, strict=True)
        try:
            rows = list(reader)
        except csv.Error as e:
            raise UnbagError(f"{f}:{reader.line_num + 1}: not a readable CSV row ({e})") from None
        except UnicodeDecodeError as e:
            raise UnbagError(f"{f}: not UTF-8 text (byte {e.start} of a block)") from None
    head, rows = rows[0] if rows else [], [(n, r) for n, r in enumerate(rows[1:], 2) if any(c.strip() for c in r)]
    if [h.strip() for h in head[:3]] != ["Question ID", "Type", "Statement"]:
        raise UnbagError(f"{f}:1: expected the header 'Question ID,Type,Statement', got {','.join(head)!r}")
    if len(rows) % 2:
        raise UnbagError(f"{f}: {len(rows)} rows; pairs of rows need an even number")
    dropped, items = Dropped(f"mmvp-vlm:{root}"), []
    for (l1, a), (l2, b) in zip(rows[::2], rows[1::2]):
        for line, r in ((l1, a), (l2, b)):
            if len(r) < 3 or not r[0].strip().isdigit() or not r[2].strip():
                raise UnbagError(f"{f}:{line}: expected 'Question ID,Type,Statement' with an integer id and a statement")
        if int(a[0]) % 2 != 1 or int(b[0]) != int(a[0]) + 1:
            raise UnbagError(f"{f}:{l1}: a pair is an odd id and the next one, got {a[0]} and {b[0]}")
        kind = a[1].strip()
        subset = kind.lower().replace(" ", "_")
        paths = [root / IMAGES / kind / f"{int(r[0])}.jpg" for r in (a, b)]
        if dropped.present(subset, *paths):
            items.append(Item(f"mmvp-{int(a[0])}", [str(p) for p in paths], [PROMPT + a[2].strip(), PROMPT + b[2].strip()],
                              {"subset": subset}, source=f"{f}:{l1}"))
    info = dropped.record({"notes": [
        "captions are 'a photo of ' + Statement, as scripts/evaluate_vlm.py", "image_official: the official "
        "script's rule, caption 2 keeps its own image on a tie; image: strict. macro/image_official is the MMVP "
        "Average"]})
    return Benchmark("mmvp-vlm", f"mmvp-vlm:{root}", unique_ids(items, str(f)), info, metric=metric)


RELEASE = "huggingface.co/datasets/MMVP/MMVP_VLM"  # where to download it
BENCHMARKS = {
    "mmvp-vlm": Kind("mmvp-vlm:DIR", lambda path, root, seed: load(path), suite="mmvp-vlm", release=RELEASE,
                     summary=Summary(("macro/image_official", "macro/image", "all/group", "all/groupmatch", "*/image_official"),
                                     "macro/image_official")),
}
