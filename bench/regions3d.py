"""SGI's region sources on CLEVR-style 3D scenes, measured in one run: recall of visible objects (a
single-box region with IoU >= 0.5 against the box of the object's visible pixels), single boxes
per object (1.0 is one box each: more are the extra boxes a count check miscounts with), regions per
image (unions included), and milliseconds per image (all images searched in one call, as SGI
searches them); by number of objects and by occlusion (an object more than 10% hidden by another).
On placed scenes of 3-6 objects (world/scene3d.py), or on the images of a built 3D benchmark
(`unbag world build --style 3d`) with --bench DIR.

    .venv/bin/python bench/regions3d.py --scenes 100 --px 64
    .venv/bin/python bench/regions3d.py --bench /tmp/ctrl3d
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from unbag.sgi.regions import RegionConfig, frame_regions_many, iou
from unbag.world.render3d import Scene3D, instances, visible
from unbag.world.scene3d import place, random_object
from unbag.world.swap3d import hidden_share, scene_from_record

SOURCES = ("blobs", "blobs+groups", "proposals", "selective", "grid", "chroma", "chroma+groups", "objects",
           "objects+groups")


def scenes(n: int, px: int, seed: int):
    """(picture, visible boxes, occluded flags) of n placed scenes of 3-6 objects."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(3, 7))
        scene, img, inst = place(rng, [random_object(rng) for _ in range(k)], px=px)
        vis = visible(inst, k)
        alone = [int((instances(Scene3D((o,), scene.camera, scene.lights), px) == 1).sum()) for o in scene.objects]
        out.append((img, [v["box"] for v in vis], [v["visible_px"] < 0.9 * a for v, a in zip(vis, alone)]))
    return out


def built(root: str, limit: int):
    """(picture, visible boxes, occluded flags) of the images of a built 3D benchmark."""
    import json
    from pathlib import Path

    from PIL import Image
    out = []
    for line in (Path(root) / "items.jsonl").read_text().splitlines()[:limit]:
        rec = json.loads(line)
        for k in range(2):
            inst = np.asarray(Image.open(Path(root) / rec["masks"][k])).astype(np.int32)
            scene = scene_from_record(rec["objects"][k], rec["scenes"][k])
            img = np.asarray(Image.open(Path(root) / rec["images"][k]).convert("RGB"))
            out.append((img, [o["box"] for o in rec["objects"][k]], [h > 0.1 for h in hidden_share(scene, inst)]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scenes", type=int, default=100)
    p.add_argument("--px", type=int, default=64)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--bench", help="a built 3D benchmark folder (its first --scenes items, both images)")
    p.add_argument("--sources", default=",".join(SOURCES))
    a = p.parse_args()
    data = built(a.bench, a.scenes) if a.bench else scenes(a.scenes, a.px, a.seed)
    print(f"{len(data)} {'images' if a.bench else 'scenes'} at {len(data[0][0])} px, "
          f"{sum(len(b) for _, b, _ in data)} objects, "
          f"{sum(sum(o) for _, _, o in data)} of them occluded > 10%")
    print(f"{'source':14s} {'recall':>7s} {'occluded':>9s} {'2-3 obj':>8s} {'4-6 obj':>8s} {'singles/obj':>11s} "
          f"{'regions':>8s} {'ms/img':>7s}")
    for source in a.sources.split(","):
        cfg = RegionConfig.parse(source)
        found, per, ratio, t = defaultdict(list), [], [], time.perf_counter()
        # all pictures in one call, as SGI searches them (a learned source runs them in batches)
        searched = [r for _, r in frame_regions_many([img for img, _, _ in data], cfg, "pad")]
        ms = 1000 * (time.perf_counter() - t) / len(data)
        for (img, boxes, occl), regions in zip(data, searched):
            singles = [r[0] for r in regions if len(r) == 1 and r[0] != (0, 0, img.shape[1], img.shape[0])]
            per.append(len(regions))
            ratio.append(len(singles) / max(1, len(boxes)))
            for box, o in zip(boxes, occl):
                hit = any(iou(box, s) >= 0.5 for s in singles)
                found["all"].append(hit)
                found["occluded" if o else "clear"].append(hit)
                found["2-3" if len(boxes) <= 3 else "4-6"].append(hit)
        r = {k: 100 * np.mean(v) if v else float("nan") for k, v in found.items()}
        print(f"{source:14s} {r['all']:7.1f} {r.get('occluded', float('nan')):9.1f} {r.get('2-3', float('nan')):8.1f} "
              f"{r.get('4-6', float('nan')):8.1f} {np.mean(ratio):11.2f} {np.mean(per):8.1f} {ms:7.1f}")


if __name__ == "__main__":
    main()
