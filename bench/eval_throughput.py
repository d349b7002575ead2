"""Evaluation speed on a SugarCrepe-layout fixture, same model, in one run:

1. unbag eval (batched, deduplicated encoding) vs a per-sample loop like the official SugarCrepe
   script (for each item: open and preprocess the image, encode it, encode the two captions,
   compare); goal >= 5x.
2. unbag eval's total wall time vs the time to encode the unique images and captions once
   (load, preprocess, encode, nothing else); goal <= 1.2x.

    .venv/bin/python bench/eval_throughput.py --images 300 --model builtin
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

SUBSETS = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")


def fixture(root: Path, n_images: int) -> None:
    """n_images COCO-sized JPEGs; every subset uses every image (as SugarCrepe reuses val2017)."""
    rng = np.random.default_rng(0)
    (root / "val2017").mkdir(parents=True)
    (root / "data").mkdir()
    for k in range(n_images):
        a = rng.integers(0, 255, (480, 640, 3), dtype=np.uint8)
        Image.fromarray(a).save(root / "val2017" / f"{k:012d}.jpg", quality=85)
    words = ["red", "blue", "green", "small", "large", "wooden", "metal", "dog", "cat", "table", "chair", "car"]
    for s in SUBSETS:
        data = {}
        for k in range(n_images):
            a, b, c = (words[(k * 7 + j * 3 + len(s)) % len(words)] for j in range(3))
            data[str(k)] = {"filename": f"{k:012d}.jpg", "caption": f"a {a} {b} next to a {c}",
                            "negative_caption": f"a {c} {b} next to a {a}"}
        (root / "data" / f"{s}.json").write_text(json.dumps(data))


@torch.inference_mode()
def per_sample(model_spec: str, root: Path) -> tuple[float, float]:
    """The official script's shape: one image and its two captions at a time."""
    from unbag import models

    b = models.load(model_spec)
    t0, correct, n = time.perf_counter(), 0, 0
    for s in SUBSETS:
        for ex in json.loads((root / "data" / f"{s}.json").read_text()).values():
            img = b.preprocess(Image.open(root / "val2017" / ex["filename"]).convert("RGB"))[None]
            u = torch.nn.functional.normalize(b.encode_images(img).embeds, dim=-1)
            t = torch.nn.functional.normalize(b.encode_texts(b.tokenize([ex["caption"], ex["negative_caption"]])).embeds, dim=-1)
            sims = (u @ t.T)[0]
            correct += int(sims[0] > sims[1])
            n += 1
    return time.perf_counter() - t0, correct / n


def unbag_eval(model_spec: str, root: Path) -> tuple[float, float]:
    from unbag.evaluation import evaluate

    t0 = time.perf_counter()
    res = evaluate(model_spec, f"sugarcrepe:{root}", progress=False)
    return time.perf_counter() - t0, res["metrics"]["all/acc"]


def encode_once(model_spec: str, root: Path) -> float:
    """Load, preprocess and encode each unique image and caption once: the floor for any evaluation."""
    from unbag import benchmarks, models
    from unbag.scoring.encode import encode_images, encode_texts

    t0 = time.perf_counter()
    b = models.load(model_spec)
    bench = benchmarks.load(f"sugarcrepe:{root}")
    images = sorted({it.images[0] for it in bench.items})
    texts = sorted({c for it in bench.items for c in it.captions})
    encode_images(b, images)
    encode_texts(b, texts)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--images", type=int, default=300)
    p.add_argument("--model", default="builtin")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        fixture(root, a.images)
        n_items = a.images * len(SUBSETS)
        loop, ours, floor = [], [], []
        for _ in range(2):  # interleaved, best of two
            t, acc_loop = per_sample(a.model, root)
            loop.append(t)
            t, acc_ours = unbag_eval(a.model, root)
            ours.append(t)
            floor.append(encode_once(a.model, root))
        print(f"{n_items} items, {a.images} unique images, model {a.model}; accuracy: loop {acc_loop:.4f}, "
              f"unbag {acc_ours:.4f} (batched float sums may flip a near-tie)")
        print(f"per-sample loop (official script's shape): {min(loop):7.2f} s  ({n_items / min(loop):7.1f} items/s)")
        print(f"unbag eval                               : {min(ours):7.2f} s  ({n_items / min(ours):7.1f} items/s)")
        print(f"encode unique images + captions once     : {min(floor):7.2f} s")
        print(f"speed-up over the per-sample loop        : {min(loop) / min(ours):.1f}x (goal >= 5x)")
        print(f"eval time / encode-once time             : {min(ours) / min(floor):.2f}x (goal <= 1.2x)")


if __name__ == "__main__":
    main()
