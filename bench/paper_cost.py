"""What `unbag run paper` asks of one GPU, estimated from counted work: the FLOPs of one image and
one caption through the model (torch's FlopCounterMode), how many images and captions each stage
encodes (the plan's own settings; SGI's region crops and text segments counted by running it on
ctrl items drawn at the model's side and on photographs), and an assumed sustained throughput.
An estimate, labelled so: `bench/gpu_check.py` measures on a GPU.

    .venv/bin/python bench/paper_cost.py                         # CLIP ViT-B/32's shape, random weights
    .venv/bin/python bench/paper_cost.py --tflops 50 150         # the throughputs to divide by
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

SUGARCREPE_ITEMS, BIVLC_ITEMS = 7511, 2933  # the releases' sizes (one image and 2 captions; 2 and 2)


def flops(fn) -> int:
    with FlopCounterMode(display=False) as m:
        fn()
    return m.get_total_flops()


class Counting:
    """Counts the images and captions a backend encodes."""

    def __init__(self, backend):
        self.images = self.texts = 0
        enc_i, enc_t = backend.encode_images, backend.encode_texts

        def images(pixels, *a, **k):
            self.images += len(pixels)
            return enc_i(pixels, *a, **k)

        def texts(ids, *a, **k):
            self.texts += len(ids)
            return enc_t(ids, *a, **k)

        backend.encode_images, backend.encode_texts = images, texts


def photos(root: Path) -> str:
    """A SugarCrepe-shaped folder of scikit-image's photographs (sugarcrepe:DIR:IMAGE_ROOT)."""
    from PIL import Image
    from skimage import data

    (root / "data").mkdir(parents=True)
    (root / "val2017").mkdir()
    names = ["astronaut", "coffee", "chelsea", "rocket", "cat", "coins"]
    items = {}
    for i, name in enumerate(names):
        Image.fromarray(getattr(data, name)()).convert("RGB").save(root / "val2017" / f"{i:012d}.jpg")
        items[str(i)] = {"filename": f"{i:012d}.jpg", "caption": f"a red {name} on a wooden table",
                         "negative_caption": f"a wooden {name} on a red table"}
    (root / "data" / "swap_att.json").write_text(json.dumps(items))
    return f"sugarcrepe:{root}:{root / 'val2017'}"


def sgi_work(backend, bench, protocol: str) -> tuple[float, float]:
    """(images, captions) encoded per item by `protocol` on `bench`, counted, the job cache empty."""
    from unbag import evaluate
    from unbag.cache import JobCache

    c = Counting(backend)
    evaluate(backend, bench, protocol=protocol, progress=False, cache=JobCache())
    return c.images / len(bench.items), c.texts / len(bench.items)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="open_clip:ViT-B-32@random")
    p.add_argument("--items", type=int, default=4, help="ctrl items per category and split that SGI's work is counted on")
    p.add_argument("--tflops", type=float, nargs="+", default=[50.0, 150.0],
                   help="sustained TFLOP/s to divide by (bf16 autocast; an A100's dense peak is 312, an H100's 989)")
    a = p.parse_args()

    from unbag import benchmarks, models
    from unbag.heads import head_class
    from unbag.heads.extract import DEFAULT_N
    from unbag.runner import paper_plan
    from unbag.training.engine import TrainConfig

    backend = models.load(a.model)
    px = min(backend.image_size)
    img = flops(lambda: backend.encode_images(torch.zeros(1, 3, px, px)))
    txt = flops(lambda: backend.encode_texts(backend.tokenize(["a small red rubber cube left of a large cyan sphere"])))
    print(f"{a.model}: {img / 1e9:.2f} GFLOPs an image at {px} px, {txt / 1e9:.2f} a caption (forward)")

    table = tomllib.loads(paper_plan(a.model, "coco.json:images"))
    with tempfile.TemporaryDirectory() as d:
        ctrl = benchmarks.load("ctrl", per_category=a.items, px=benchmarks.drawn_size("ctrl", px))
        work = {proto: sgi_work(backend, ctrl, proto) for proto in ("sgi", "sgi:paper")}
        photo = benchmarks.load(photos(Path(d) / "sc"))
        photo_work = {proto: sgi_work(backend, photo, proto) for proto in ("sgi", "sgi:paper")}
    for proto, (i, t) in work.items():
        print(f"{proto} on ctrl at {px} px: {i:.1f} images and {t:.1f} captions encoded an item; "
              f"on photographs {photo_work[proto][0]:.1f} and {photo_work[proto][1]:.1f}")

    ft = TrainConfig.for_method("ft")
    heads = [t["method"] for t in table["train"].values() if t["method"] != "ft"]
    # heads on the same model and data share one extraction, apart by whether it holds SGI's regions
    kinds = {head_class(h).attends == "regions" for h in heads}
    regional = int(True in kinds)
    crops = photo_work["sgi"][0]  # SGI's images a photograph: its region crops (a SugarCrepe item holds one)
    ctrl_items = table["per_category"] * 5 * 2
    heads_rows = len(heads) + 1  # each head's protocol, and FT's model, read one image and caption an item's picture
    stages = {
        f"FT: {ft.steps} steps of {ft.batch_size} pairs (forward + backward ~ 3 forwards)":
            3 * ft.steps * ft.batch_size * (img + txt),
        f"features for {len(heads)} heads, {len(kinds)} extractions of {DEFAULT_N} COCO images and captions "
        f"({regional} with region crops)": len(kinds) * DEFAULT_N * (img + txt) + regional * DEFAULT_N * crops * img,
        f"ctrl ({ctrl_items} items, 2 pictures and 2 captions each): global, FT and {len(heads)} heads":
            (1 + heads_rows) * ctrl_items * 2 * (img + txt),
        "ctrl: SGI and the paper's SGI": sum(ctrl_items * (i * img + t * txt) for i, t in work.values()),
        f"SugarCrepe ({SUGARCREPE_ITEMS}) and BiVLC ({BIVLC_ITEMS}), every protocol":
            (1 + heads_rows) * (SUGARCREPE_ITEMS * (img + 2 * txt) + BIVLC_ITEMS * 2 * (img + txt))
            + sum((SUGARCREPE_ITEMS + 2 * BIVLC_ITEMS) * i * img + (SUGARCREPE_ITEMS + BIVLC_ITEMS) * t * txt
                  for i, t in photo_work.values()),  # a BiVLC item: two photographs, two captions
    }
    total = sum(stages.values())
    for name, f in stages.items():
        print(f"  {f / 1e15:8.2f} PFLOP  {name}")
    print(f"  {total / 1e15:8.2f} PFLOP  in all (head training on cached features and rendering not counted)")
    for t in a.tflops:
        print(f"estimate at {t:.0f} TFLOP/s sustained: {total / (t * 1e12) / 60:.0f} min of GPU compute")


if __name__ == "__main__":
    main()
