"""Whether a benchmark's peak memory grows with its number of items. In one run, a synthetic
VL-CheckList release (corpus/ yamls, data/ JSON, Visual Genome-shaped images) is scored by
`unbag eval` (global protocol, results and per-item files written) in a fresh process at N and at
M items; both share the same 64 pictures and 2,000 distinct captions, so that the encodings are
the same and only the items grow. Prints each peak RSS, their ratio (goal <= 1.2x) and the time.

    .venv/bin/python bench/items_memory.py --small 10000 --large 400000
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

TYPES = ("Attribute/color", "Attribute/material", "Attribute/size", "Object/Size/large", "Relation/spatial",
         "Relation/action")
WORDS = ["red", "blue", "green", "wooden", "metal", "small", "large", "dog", "cat", "table", "chair", "car", "on", "near"]


def build(root: Path, items: int, pictures: int = 64, captions: int = 2000) -> None:
    """`items` records spread over one file per TYPE x source (vg, vaw), over `pictures` images."""
    vg = root / "vg" / "VG_100K"
    vg.mkdir(parents=True)
    for k in range(pictures):
        Image.fromarray(np.random.default_rng(k).integers(0, 255, (240, 320, 3), np.uint8)).save(vg / f"{k}.jpg")
    caps = [" ".join(WORDS[(c * p + p) % len(WORDS)] for p in range(1, 6)) + f" {c}" for c in range(captions)]
    files = [(t, src) for t in TYPES for src in ("vg", "vaw")]
    for f, (t, src) in enumerate(files):
        anno = f"data/{t}/{src}.json"
        (root / "corpus" / "v1" / t).mkdir(parents=True, exist_ok=True)
        (root / "corpus" / "v1" / t / f"{src}.yaml").write_text(f'ANNO_PATH: "{anno}"\nIMG_ROOT: "vg"\nTYPE: "X"\n')
        n = items // len(files) + (f < items % len(files))
        recs = [[f"VG_100K/{(i * 7 + f) % pictures}.jpg", {"POS": [caps[(i + f) % captions]],
                                                              "NEG": [caps[(i + f + 1) % captions]]}] for i in range(n)]
        (root / anno).parent.mkdir(parents=True, exist_ok=True)
        (root / anno).write_text(json.dumps(recs))


def child(model: str, root: str, out: str) -> None:
    """One `unbag eval` in this process: its wall time and peak RSS, as JSON."""
    from unbag.evaluation import evaluate
    t0 = time.perf_counter()
    res = evaluate(model, f"vl-checklist:{root}", out=out, progress=False)
    print(json.dumps({"wall": time.perf_counter() - t0, "items": res["n_items"],
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _run(model: str, root: Path, out: Path) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", model, str(root), str(out)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--small", type=int, default=10_000)
    p.add_argument("--large", type=int, default=400_000)
    p.add_argument("--model", default="builtin")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(*a.child)
        return
    with tempfile.TemporaryDirectory() as d:
        got = []
        for n in (a.small, a.large):
            build(Path(d) / str(n), n)
            got.append(_run(a.model, Path(d) / str(n), Path(d) / f"{n}.json"))
        for g in got:
            print(f"vl-checklist, {g['items']:7d} items: peak RSS {g['maxrss_mb']:7.0f} MB, {g['wall']:6.1f} s")
        print(f"peak RSS ratio, {got[1]['items'] // max(got[0]['items'], 1)}x the items: "
              f"{got[1]['maxrss_mb'] / got[0]['maxrss_mb']:.2f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
