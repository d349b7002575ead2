"""What `unbag suite` costs beyond encoding its distinct inputs once, and whether its memory grows
with the number of items. In one run, on a generated suite root laid out as five official
releases whose items reuse images (SugarCrepe's seven files over one COCO folder, What'sUp's four
captions per picture and its COCO-QA items over the same folder, CREPE's rows cropping boxes out of
few Visual Genome pictures, ColorSwap's packed images.zip, ImageCoDe's sets of ten):

1. `unbag suite` (global protocol, a fresh run folder) against the floor: every distinct image
   (a crop counts as its own) and caption of the suite, read, preprocessed and encoded once;
   goal <= 1.2x;
2. the peak memory (max RSS) of the suite in a fresh process at N and at 4N items per benchmark,
   the same pictures: streaming, it should not grow with the items.

    .venv/bin/python bench/suite_cost.py --items 400 --pictures 60 --model builtin
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

WORDS = ["red", "blue", "green", "small", "large", "wooden", "metal", "dog", "cat", "table", "chair", "car"]
RELATIONS = ["on", "under", "left of", "right of"]


def _jpeg(path: Path, k: int, size=(640, 480)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    a = np.random.default_rng(k).integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(a).save(path, quality=85)


def _caption(k: int, j: int = 0) -> str:
    a, b, c = (WORDS[(k * 7 + j * 3 + i * 5) % len(WORDS)] for i in range(3))
    return f"a {a} {b} next to a {c} ({k})"


def build(root: Path, items: int, pictures: int) -> None:
    """The five releases under `root`, `items` items each over `pictures` distinct pictures."""
    coco = root / "coco"
    for k in range(pictures):
        _jpeg(coco / f"{k:012d}.jpg", k)
    # SugarCrepe: seven files over one COCO folder (image root named in suite.toml)
    (root / "sugarcrepe" / "data").mkdir(parents=True)
    for s in ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj"):
        data = {str(k): {"filename": f"{k % pictures:012d}.jpg", "caption": _caption(k), "negative_caption":
                         _caption(k, 1)} for k in range(items // 7)}
        (root / "sugarcrepe" / "data" / f"{s}.json").write_text(json.dumps(data))
    (root / "suite.toml").write_text('[suite]\nsugarcrepe = "coco"\ncrepe = "vg"\n')
    # What'sUp: COCO-QA one-object items over the same pictures, and Controlled-A images
    wu = root / "whatsup"  # what the repo keeps in data/
    wu.mkdir(parents=True)
    (wu / "coco_qa_one_obj.json").write_text(json.dumps(
        [[k % pictures, f"a dog on the left ({k})", f"a dog on the right ({k})"] for k in range(items // 2)]))
    shutil.copytree(coco, wu / "val2017")
    a = []
    for k in range(items // 2):
        name = f"obj{k % pictures}_{RELATIONS[k % 4].replace(' ', '_')}_table.jpeg"
        if not (wu / "controlled_images" / name).exists():
            _jpeg(wu / "controlled_images" / name, 10_000 + k)
        a.append({"image_path": f"data/controlled_images/{name}",
                  "caption_options": [f"a mug {r} a table ({k % pictures})" for r in
                                      [RELATIONS[k % 4]] + [r for r in RELATIONS if r != RELATIONS[k % 4]]]})
    (wu / "controlled_images_dataset.json").write_text(json.dumps(a))
    # CREPE: productivity rows cropping boxes out of few Visual Genome pictures
    vg = root / "vg" / "VG_100K"
    for k in range(max(2, pictures // 4)):
        _jpeg(vg / f"{k + 1}.jpg", 20_000 + k, (500, 375))
    head = "image_id,caption,n,n_objects,n_relations,n_attributes,n_connected_components,hard_negs,x,y,width,height\n"
    rows = [f'{k % max(2, pictures // 4) + 1},{_caption(k)},4,2,1,1,1,"{[_caption(k, j) for j in range(1, 6)]}",'
            f"{10 + k % 200},{5 + k % 150},{120 + k % 50},{100 + k % 40}\n" for k in range(items)]
    (root / "crepe" / "prod_hard_negatives" / "swap").mkdir(parents=True)
    (root / "crepe" / "prod_hard_negatives" / "swap" / "prod_vg_hard_negs_swap_complexity_4.csv").write_text(
        head + "".join(rows))
    # ColorSwap: images.zip left packed
    cs = root / "colorswap"
    cs.mkdir(parents=True)
    recs = []
    with zipfile.ZipFile(cs / "images.zip", "w") as z:
        for k in range(items // 2):
            for j in (1, 2):
                path = f"images/img_{k}_{j}.png"
                buf = Path(tempfile.mktemp(suffix=".png"))
                Image.fromarray(np.random.default_rng(30_000 + 2 * k + j).integers(0, 255, (256, 256, 3), np.uint8)
                                ).save(buf)
                z.write(buf, path)
                buf.unlink()
            recs.append({"id": k, "caption_1": f"a red raft on blue water ({k})", "caption_2":
                         f"a blue raft on red water ({k})", "image_1": f"images/img_{k}_1.png",
                         "image_2": f"images/img_{k}_2.png", "image_source": "midjourney", "caption_source": "human"})
    (cs / "test.json").write_text(json.dumps(recs))
    # ImageCoDe: sets of ten, several descriptions per set
    ic = root / "imagecode"
    sets = max(1, pictures // 10)
    for s in range(sets):
        for x in range(10):
            _jpeg(ic / "image-sets" / f"open-images-{s}" / f"img{x}.jpg", 40_000 + 10 * s + x, (320, 240))
    (ic / "valid_data.json").write_text(json.dumps(
        {f"open-images-{s}": {str(d % 10): f"the one with a {WORDS[d % 12]} thing ({d})"
                              for d in range(s, items, sets)} for s in range(sets)}))


def child(model: str, root: str, out: str) -> None:
    """One suite run in this process: wall time and peak RSS, as JSON. The libraries are imported
    first (a loaded model imports them), as for the floor; the run loads the model again."""
    from unbag import models
    from unbag.suite_root import run_suite
    models.load(model)
    t0 = time.perf_counter()
    results, _, _ = run_suite(model, root, ["global"], out, progress=False)
    print(json.dumps({"wall": time.perf_counter() - t0, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                      / 1024, "items": sum(r["n_items"] for r in results)}))


def encode_once(model: str, root: Path) -> tuple[float, int, int]:
    """Load the model, read, preprocess and encode every distinct image and caption of the suite
    once (seconds, images, captions); reading the annotations is not counted."""
    from unbag import benchmarks, models
    from unbag.benchmarks.base import image_key
    from unbag.scoring.encode import encode_images, encode_texts
    from unbag.suite_root import find

    found, _ = find(root)
    images, texts = {}, set()
    for spec in found.values():
        for it in benchmarks.load(spec).items:
            images.update({image_key(r): r for r in it.images})
            texts.update(it.captions)
    models.load(model)  # the libraries imported, as in the suite's process
    t0 = time.perf_counter()
    b = models.load(model)
    encode_images(b, list(images.values()))
    encode_texts(b, sorted(texts))
    return time.perf_counter() - t0, len(images), len(texts)


def _run(model: str, root: Path, out: Path) -> dict:
    r = subprocess.run([sys.executable, __file__, "--child", model, str(root), str(out)], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--items", type=int, default=400, help="items per benchmark (about)")
    p.add_argument("--pictures", type=int, default=60, help="distinct pictures they share")
    p.add_argument("--model", default="builtin")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        child(*a.child)
        return
    with tempfile.TemporaryDirectory() as d:
        small, large = Path(d) / "n", Path(d) / "4n"
        build(small, a.items, a.pictures)
        build(large, 4 * a.items, a.pictures)
        runs, floors = [], []
        for k in range(2):  # interleaved, best of two
            runs.append(_run(a.model, small, Path(d) / f"out{k}"))
            floors.append(encode_once(a.model, small))
        big = _run(a.model, large, Path(d) / "out-4n")
        suite, (floor, n_img, n_txt) = min(r["wall"] for r in runs), min(floors)
        print(f"suite of 5 benchmarks, {runs[0]['items']} items, {n_img} distinct images (crops included), "
              f"{n_txt} distinct captions; model {a.model}")
        print(f"unbag suite (fresh run folder)             : {suite:7.2f} s")
        print(f"encode the distinct inputs once            : {floor:7.2f} s")
        print(f"suite / encode-once                        : {suite / floor:.2f}x (goal <= 1.2x)")
        print(f"peak RSS at {runs[0]['items']:6d} items                : {runs[0]['maxrss_mb']:7.0f} MB")
        print(f"peak RSS at {big['items']:6d} items (4x)           : {big['maxrss_mb']:7.0f} MB "
              f"({big['maxrss_mb'] / runs[0]['maxrss_mb']:.2f}x; the suite took {big['wall']:.1f} s)")


if __name__ == "__main__":
    main()
