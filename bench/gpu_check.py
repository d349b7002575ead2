"""A prepared check of unbag's CUDA paths, a few minutes on one GPU; one line per check.

    python bench/gpu_check.py            # on a machine with a GPU (falls back to the CPU without one)
    python bench/gpu_check.py --cpu      # the CPU fallback, small sizes (what CI runs)

Checks: the 3D ctrl rendered at 224 px on the device (pictures a second) against the CPU's render
of the same scenes (pixel differences); the CUDA render test; global cosine on ctrl at a 224 px
model's side with AMP; the paper's plan (`unbag run paper`) for a few steps with AMP on a COCO file
of scikit-image's photographs. Each line says the device it ran on.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def line(name: str, text: str) -> None:
    print(f"{name:<28} {text}", flush=True)


def render(device: str, px: int, n: int) -> None:
    from unbag.world import swap3d
    from unbag.world.render3d import picture

    scenes = [s for k in range(n) for s in swap3d.build_item(0, "ood", swap3d.CATEGORIES[k % 5], k // 5, px).scenes]
    picture(scenes[0], px, device)  # warm-up (CUDA context, kernels)
    t = time.perf_counter()
    got = [picture(s, px, device) for s in scenes]
    if device != "cpu":
        torch.cuda.synchronize()
    rate = len(scenes) / (time.perf_counter() - t)
    t = time.perf_counter()
    cpu = [picture(s, px) for s in scenes[:4]]
    cpu_rate = len(cpu) / (time.perf_counter() - t)
    line(f"render {px} px", f"{device}: {rate:.1f} pictures/s; one CPU thread: {cpu_rate:.1f} pictures/s")
    diff = np.stack([np.abs(a.astype(int) - b.astype(int)) for a, b in zip(got, cpu)])
    line("render vs cpu", f"max {diff.max()} levels, 99th percentile {np.percentile(diff, 99):.0f}, "
                          f"{(diff.max(-1) > 8).mean():.4%} of pixels off by more than 8")


def render_test(device: str) -> None:
    if device == "cpu":
        line("render test", "skipped: no CUDA device")
        return
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "tests/world/test_render_device.py"],
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    line("render test", (out.stdout.strip().splitlines() or ["(no output)"])[-1])


def evaluate(device: str, model: str, per_category: int) -> None:
    import unbag.benchmarks.ctrl as ctrl
    from unbag import evaluate as run_eval

    ctrl.DEFAULT_PER_CATEGORY = per_category
    t = time.perf_counter()
    res = run_eval(model, "ctrl", device=device, precision="bf16" if device != "cpu" else "fp32")
    line("eval ctrl at model size", f"{device}: {res['benchmark']['size']} px, {res['n_items']} items, "
                                    f"group {100 * res['metrics']['all/all/group']:.1f}, {time.perf_counter() - t:.1f} s")


def tiny_coco(root: Path) -> str:
    """A COCO captions file of scikit-image's photographs (ANNOTATIONS:IMAGES)."""
    import json

    from PIL import Image
    from skimage import data

    (root / "images").mkdir()
    names = ["astronaut", "coffee", "chelsea", "rocket", "cat", "hubble_deep_field", "immunohistochemistry", "coins"]
    images, anns = [], []
    for i, name in enumerate(names):
        Image.fromarray(getattr(data, name)()).convert("RGB").save(root / "images" / f"{i:012d}.jpg")
        images.append({"id": i, "file_name": f"{i:012d}.jpg"})
        anns += [{"image_id": i, "caption": f"a photograph of a {name.replace('_', ' ')}"},
                 {"image_id": i, "caption": f"the {name.replace('_', ' ')} in a picture"}]
    (root / "captions.json").write_text(json.dumps({"images": images, "annotations": anns}))
    return f"{root / 'captions.json'}:{root / 'images'}"


def paper(device: str, model: str, steps: int) -> None:
    """The paper's plan for a few steps: FT and four heads (bf16 autocast on CUDA), every protocol."""
    from unbag import models
    from unbag.cli import main as cli

    with tempfile.TemporaryDirectory() as d:
        coco = tiny_coco(Path(d))
        model = str(models.load(model).save(Path(d) / "model"))  # random weights drawn once, for every table
        t = time.perf_counter()
        rc = cli(["run", "paper", "--model", model, "--coco", coco, "--out", str(Path(d) / "paper"), "--device", device,
                  "--per-category", "1", "--steps", str(steps), "--batch-size", "4", "--n", "8", "--quiet"])
        line("paper's plan, AMP", f"{device}: exit {rc}, {steps} steps a table, in {time.perf_counter() - t:.1f} s")


def baselines(device: str, model: str, steps: int) -> None:
    """CE-CLIP, FSC-CLIP (LoRA) and TripletCLIP for a few steps on the world (bf16 autocast on CUDA)."""
    from unbag.training.engine import TrainConfig, Trainer

    for method in ("ce-clip", "fsc-clip", "tripletclip"):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            cfg = TrainConfig.for_method(method, model=model, data="world@flat", steps=steps, batch_size=8,
                                         warmup=1, workers=0, log_every=1, device=device)
            Trainer(cfg, d).fit(progress=False)
            last = (Path(d) / "log.jsonl").read_text().splitlines()[-1]
            line(f"{method}, AMP", f"{device}: {steps} steps in {time.perf_counter() - t:.1f} s, last loss "
                 f"{float(json.loads(last)['loss']):.4f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu", action="store_true", help="the CPU fallback with small sizes (CI)")
    a = p.parse_args()
    device = "cuda" if torch.cuda.is_available() and not a.cpu else "cpu"
    small = device == "cpu"
    line("device", torch.cuda.get_device_name(0) if device == "cuda" else "cpu (fallback: small sizes)")
    render(device, 96 if small else 224, 2 if small else 20)
    render_test(device)
    model = "open_clip:unbag-tiny@random" if small else "open_clip:ViT-B-32@random"
    evaluate(device, model, 1 if small else 20)
    paper(device, model, 2 if small else 5)
    baselines(device, model, 2 if small else 5)


if __name__ == "__main__":
    main()
