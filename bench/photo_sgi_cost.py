"""SGI and the TFLocal and TFLocal-LI (plain and calibrated) heads on photographs with a real-sized model: cost vs global scoring, one run.

The model is open_clip's ViT-B/32 with random weights (224 px; the cost of a real one, not its
accuracy); the images are COCO-sized JPEGs (640 x 480) cut from the photographs that ship with
scikit-image, in SugarCrepe's layout. Each protocol starts from a cold cache. Goal: SGI with the
photo benchmarks' default regions <= 10x global (the paper's SGI: 133-210x).

    .venv/bin/python bench/photo_sgi_cost.py --images 200
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

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "stereo_motorcycle", "immunohistochemistry", "hubble_deep_field")
WORDS = ("red", "white", "black", "small", "large", "metal", "cat", "cup", "rocket", "woman", "helmet", "tower")
SUBSETS = ("replace_att", "swap_att", "replace_rel")


def photos() -> list[np.ndarray]:
    import skimage.data
    out = []
    for name in PHOTOS:
        img = getattr(skimage.data, name)()
        out.append(img[0] if isinstance(img, tuple) else img)
    return out


def fixture(root: Path, n_images: int) -> Path:
    """n_images 640 x 480 JPEGs (random crops of the photos, resized) and a caption file for
    `unbag features` (jsonl), in SugarCrepe's layout."""
    rng = np.random.default_rng(0)
    src = photos()
    (root / "val2017").mkdir(parents=True)
    (root / "data").mkdir()
    lines = []
    for k in range(n_images):
        p = src[k % len(src)]
        h, w = p.shape[:2]
        ch, cw = int(h * rng.uniform(0.5, 1.0)), int(w * rng.uniform(0.5, 1.0))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        im = Image.fromarray(p[y:y + ch, x:x + cw]).resize((640, 480), Image.BICUBIC)
        if rng.random() < 0.5:
            im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        im.save(root / "val2017" / f"{k:012d}.jpg", quality=90)
        a, b, c, d = (WORDS[int(i)] for i in rng.integers(0, len(WORDS), 4))
        lines.append(json.dumps({"image": f"val2017/{k:012d}.jpg", "caption": f"a {a} {c} next to a {b} {d}"}))
    for s in SUBSETS:
        data = {}
        for k in range(n_images):
            a, b, c, d = (WORDS[(k * 5 + j * 3 + len(s)) % len(WORDS)] for j in range(4))
            data[str(k)] = {"filename": f"{k:012d}.jpg", "caption": f"a {a} {c} next to a {b} {d}",
                            "negative_caption": f"a {b} {c} next to a {a} {d}"}
        (root / "data" / f"{s}.json").write_text(json.dumps(data))
    (root / "captions.jsonl").write_text("\n".join(lines) + "\n")
    return root


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=200)
    ap.add_argument("--model", default="open_clip:ViT-B-32@random", help="default: random weights, 224 px")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    from unbag import benchmarks, models
    from unbag.api import features, train
    from unbag.evaluation import evaluate
    from unbag.sgi.config import SGIConfig
    from unbag.sgi.encode import encode_regions

    torch.manual_seed(0)
    backend = models.load(a.model)
    with tempfile.TemporaryDirectory() as tmp:
        root = fixture(Path(tmp) / "sc", a.images)
        bench = benchmarks.load(f"sugarcrepe:{root}")
        n_items, n_img = len(bench.items), a.images
        runs = {}
        for name, protocol, opts in (("global", "global", {}),
                                     ("sgi (photo default: selective, 1 view)", "sgi", {}),
                                     ("sgi, selective with 2 phase views", "sgi", {"phases": 2}),
                                     ("sgi, mode=tokens (patches of each region)", "sgi", {"mode": "tokens"}),
                                     ("sgi:paper (grid crops)", "sgi:paper", {}),
                                     ("sgi:paper, mode=tokens", "sgi:paper", {"mode": "tokens"})):
            t, res = timed(lambda: evaluate(backend, bench, protocol, progress=False, options=opts))
            runs[name] = (t, res["metrics"]["all/acc"])
        cfg = SGIConfig.for_benchmark("sugarcrepe")
        regs = encode_regions(backend, bench, cfg)  # warm: counts only
        per_image = np.mean([len(r.regions) for r in regs])
        from unbag.sgi.regions import RegionConfig, frame_regions
        t_search, _ = timed(lambda: [frame_regions(np.asarray(Image.open(root / "val2017" / f"{k:012d}.jpg")),
                                                   RegionConfig.parse("selective"), "pad") for k in range(n_img)])
        t_feat, cache = timed(lambda: features(backend, f"jsonl:{root / 'captions.jsonl'}", Path(tmp) / "feat",
                                               n=n_img, regions=False))
        t_train, head = timed(lambda: train("tflocal", backend, str(cache), Path(tmp) / "head", steps=50,
                                            batch_size=32, progress=False))
        t, res = timed(lambda: evaluate(backend, bench, f"head:{head}", progress=False))
        runs["TFLocal head (patch tokens)"] = (t, res["metrics"]["all/acc"])
        li = train("tflocal-li", backend, str(cache), Path(tmp) / "head-li", steps=50, batch_size=32, lr=3e-4,
                   progress=False)
        t, res = timed(lambda: evaluate(backend, bench, f"head:{li}", progress=False))
        runs["TFLocal-LI head (patch tokens)"] = (t, res["metrics"]["all/acc"])
        cal = train("tflocal-li", backend, str(cache), Path(tmp) / "head-li-cal", steps=50, batch_size=32, lr=3e-4,
                    calibrate=True, progress=False)  # the same weights, scored calibrated
        t, res = timed(lambda: evaluate(backend, bench, f"head:{cal}", progress=False))
        runs["TFLocal-LI head, calibrated"] = (t, res["metrics"]["all/acc"])
    g = runs["global"][0]
    print(f"{a.model}, {n_img} photos (640 x 480), {n_items} SugarCrepe-layout items, one run, cold caches (each call its own JobCache)")
    print(f"{'protocol':42s} {'seconds':>8s} {'x global':>9s} {'acc':>6s}")
    for name, (t, acc) in runs.items():
        print(f"{name:42s} {t:8.1f} {t / g:9.1f} {acc:6.3f}")
    print(f"photo default: {per_image:.1f} regions per image (boxes + the whole picture); region search "
          f"{1000 * t_search / n_img:.0f} ms per image")
    print(f"TFLocal: features {t_feat:.1f} s for {n_img} captioned photos with hard negatives, "
          f"50 training steps {t_train:.1f} s")


if __name__ == "__main__":
    main()
