"""Cost of a CLIC step and of a DeGLA step vs an FT step: built-in model, same batch size and loader.

CLIC alternates hard-negative steps (a concatenated image pair, five texts each, spaCy-tagged
swap negatives) with plain CLIP steps, and freezes the vision tower; FT encodes every sample and
its binding-swap twin through both towers; DeGLA encodes each caption with 4 typed negatives and
runs the EMA teacher on all of it (no gradients). Prints seconds per step (data included, warm-up
excluded), measured in one run (methods interleaved, twice, best of each), and ratios to FT.

    .venv/bin/python bench/method_cost.py --steps 40 --batch-size 128
"""
from __future__ import annotations

import argparse
import tempfile
import time
import warnings


def seconds_per_step(method: str, steps: int, batch_size: int, workers: int) -> tuple[float, list[float]]:
    from unbag.training.engine import TrainConfig, Trainer

    with tempfile.TemporaryDirectory() as d:
        cfg = TrainConfig.for_method(method, model="builtin", steps=steps + 4, batch_size=batch_size,
                                     lr=1e-5, warmup=1, workers=workers, ckpt_every=10**9, log_every=10**9)
        tr = Trainer(cfg, d)
        times = []
        real = tr.opt.step

        def timed_step(*a, **kw):
            out = real(*a, **kw)
            times.append(time.perf_counter())
            return out
        tr.opt.step = timed_step
        tr.fit(progress=False)
    gaps = [b - a for a, b in zip(times[3:], times[4:])]  # the first 4 steps are warm-up
    return sum(gaps) / len(gaps), gaps


def main() -> None:
    warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)`")
    warnings.filterwarnings("ignore", message="Seems like `optimizer.step\\(\\)` has been overridden")
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=1)
    a = p.parse_args()
    ft, clic, hard, plain, degla = [], [], [], [], []
    for _ in range(2):
        ft.append(seconds_per_step("ft", a.steps, a.batch_size, a.workers)[0])
        mean, gaps = seconds_per_step("clic", a.steps, a.batch_size, a.workers)
        clic.append(mean)
        # gaps[j] is step j + 4: even steps are hard-negative steps
        hard.append(sum(gaps[0::2]) / len(gaps[0::2]))
        plain.append(sum(gaps[1::2]) / len(gaps[1::2]))
        degla.append(seconds_per_step("degla", a.steps, a.batch_size, a.workers)[0])
    ms = lambda xs: ", ".join(f"{x * 1000:.0f}" for x in xs)  # noqa: E731
    print(f"batch {a.batch_size}, built-in model, {a.steps} timed steps per run")
    print(f"FT step                 : {min(ft) * 1000:7.1f} ms  (runs: {ms(ft)})")
    print(f"CLIC step (mean)        : {min(clic) * 1000:7.1f} ms  (runs: {ms(clic)})")
    print(f"  hard-negative steps   : {min(hard) * 1000:7.1f} ms")
    print(f"  plain CLIP steps      : {min(plain) * 1000:7.1f} ms")
    print(f"DeGLA step              : {min(degla) * 1000:7.1f} ms  (runs: {ms(degla)})")
    print(f"ratio CLIC / FT         : {min(clic) / min(ft):.2f}x per step")
    print(f"ratio DeGLA / FT        : {min(degla) / min(ft):.2f}x per step (teacher and 4 negatives included)")


if __name__ == "__main__":
    main()
