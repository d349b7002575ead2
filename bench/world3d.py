"""Perspective and occlusion in a built 3D benchmark (`unbag world build --style 3d`), one run.

Prints, over every image of the folder:
- within each size class, the correlation of an object's visible box height with the image row
  of its box bottom (near objects stand lower in the picture and look bigger), for objects less
  than 10% hidden;
- how far small and large visible areas overlap (percentiles, and the share of small objects
  that look bigger than the 5th-percentile large one);
- the share of images with 3 or more objects in which some object is more than 10% hidden.

    .venv/bin/python bench/world3d.py /tmp/ctrl3d
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from PIL import Image

from unbag.world.swap3d import hidden_share, scene_from_record


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bench", help="a built 3D benchmark folder")
    a = p.parse_args()
    root = Path(a.bench)
    rows: dict[str, list] = {"small": [], "large": []}
    crowded = crowded_hidden = images = 0
    for line in (root / "items.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for k in range(2):
            objs = rec["objects"][k]
            inst = np.asarray(Image.open(root / rec["masks"][k])).astype(np.int32)
            hidden = hidden_share(scene_from_record(objs, rec["scenes"][k]), inst)
            images += 1
            if len(objs) >= 3:
                crowded += 1
                crowded_hidden += any(h > 0.1 for h in hidden)
            for o, h in zip(objs, hidden):
                x0, y0, x1, y1 = o["box"]
                rows[o["size"]].append((y1, y1 - y0, o["visible_px"], h, (x1 - x0) * (y1 - y0)))
    print(f"{root}: {images} images, {sum(len(v) for v in rows.values())} objects")
    print("| | small | large |\n|---|---|---|")
    corr = {s: np.corrcoef(*np.array([(r, hgt) for r, hgt, _, h, _ in v if h < 0.1]).T)[0, 1] for s, v in rows.items()}
    print(f"| correlation of box height with box-bottom row (< 10% hidden) | {corr['small']:.2f} | {corr['large']:.2f} |")
    area = {s: np.array([px for _, _, px, _, _ in v]) for s, v in rows.items()}
    box = {s: np.array([b for *_, b in v]) for s, v in rows.items()}
    pct = {s: np.percentile(v, [5, 50, 95]) for s, v in area.items()}
    print("| visible area, px (5th / 50th / 95th percentile) | " +
          " | ".join(" / ".join(f"{x:.0f}" for x in pct[s]) for s in ("small", "large")) + " |")
    bpct = {s: np.percentile(v, [5, 50, 95]) for s, v in box.items()}
    print("| visible box area, px (5th / 50th / 95th percentile) | " +
          " | ".join(" / ".join(f"{x:.0f}" for x in bpct[s]) for s in ("small", "large")) + " |")
    pairs = 100 * (box["small"][:, None] >= box["large"][None]).mean()
    print(f"\na small object's box is at least a large one's in {pairs:.1f}% of (small, large) pairs.")
    bigger = 100 * (area["small"] > pct["large"][0]).mean()
    print(f"{bigger:.1f}% of small objects look bigger than the 5th-percentile large one; "
          f"{crowded_hidden} of {crowded} images with 3+ objects ({100 * crowded_hidden / max(crowded, 1):.1f}%) "
          "have an object more than 10% hidden.")


if __name__ == "__main__":
    main()
