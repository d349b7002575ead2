"""Pre-training throughput: unbag's trainer vs a plain open_clip ClipLoss loop, same model and batch.

Both read the same world batches (same loader) and tokenize the same way; the plain loop is what a
user would write by hand with open_clip (model(image, text) -> ClipLoss -> AdamW). Prints pairs/s
for each and their ratio, measured in one run (A, B, A, B interleaved, best of each).

    .venv/bin/python bench/train_throughput.py --steps 60 --batch-size 128
"""
from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import torch


def plain_open_clip(steps: int, batch_size: int, workers: int) -> float:
    import open_clip

    from unbag.models.openclip import _open_clip
    from unbag.training.data import batches

    _open_clip()
    torch.manual_seed(0)
    model, _, _ = open_clip.create_model_and_transforms("unbag-tiny")
    tok = open_clip.get_tokenizer("unbag-tiny")
    loss_fn = open_clip.loss.ClipLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.1)
    mean = torch.tensor(model.visual.preprocess_cfg["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(model.visual.preprocess_cfg["std"]).view(1, 3, 1, 1)
    model.train()
    t0, n = None, 0
    for k, raw in enumerate(batches("world", 0, batch_size, 64, 0, steps + 5, workers)):
        if k == 5:  # warm-up steps excluded
            t0, n = time.perf_counter(), 0
        images = (raw["images"].permute(0, 3, 1, 2).float() / 255 - mean) / std
        image_features, text_features, logit_scale = model(images, tok(raw["captions"]))
        loss = loss_fn(image_features, text_features, logit_scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        n += len(raw["captions"])
    return n / (time.perf_counter() - t0)


def unbag_trainer(steps: int, batch_size: int, workers: int) -> float:
    from unbag.training.engine import TrainConfig, Trainer

    with tempfile.TemporaryDirectory() as d:
        cfg = TrainConfig(steps=steps + 5, batch_size=batch_size, workers=workers,
                          ckpt_every=10**9, log_every=1)
        tr = Trainer(cfg, d)
        times = []
        real = tr.opt.step

        def timed_step(*a, **kw):  # stamp each step's end to exclude the same warm-up steps
            out = real(*a, **kw)
            times.append(time.perf_counter())
            return out
        tr.opt.step = timed_step
        tr.fit(progress=False)
        return batch_size * (len(times) - 5) / (times[-1] - times[4])


def main() -> None:
    # the timing wrapper around optimizer.step hides it from the scheduler's order check
    warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)`")
    warnings.filterwarnings("ignore", message="Seems like `optimizer.step\\(\\)` has been overridden")
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=1)
    a = p.parse_args()
    plain, ours = [], []
    for _ in range(2):
        plain.append(plain_open_clip(a.steps, a.batch_size, a.workers))
        ours.append(unbag_trainer(a.steps, a.batch_size, a.workers))
    print(f"plain open_clip loop : {max(plain):8.1f} pairs/s  (runs: {', '.join(f'{x:.0f}' for x in plain)})")
    print(f"unbag trainer        : {max(ours):8.1f} pairs/s  (runs: {', '.join(f'{x:.0f}' for x in ours)})")
    print(f"ratio unbag / plain  : {max(ours) / max(plain):.3f}  (target >= 1.0)")


if __name__ == "__main__":
    main()
