"""Run under torchrun by tests/test_torchrun.py: every multi-process path in one launch.

Usage: torchrun --nproc_per_node 2 tests/torchrun_job.py OUT BENCH_DIR SUITE_ROOT
Trains negclip, clic, degla, ce-clip, fsc-clip and tripletclip for a few steps (OUT/train-METHOD), evaluates the built-in model
on BENCH_DIR under global and SGI (OUT/eval-PROTOCOL.json) and runs the suite found under
SUITE_ROOT (OUT/suite), as `unbag train`, `unbag eval` and `unbag suite` do under torchrun; then a
plan that trains a head (rank 0 alone) and scores BENCH_DIR with it (OUT/plan), as `unbag run`.
"""
import os
import sys
import time

from unbag import dist
from unbag.evaluation import evaluate
from unbag.runner import run_plan
from unbag.suite_root import run_suite
from unbag.training.engine import TrainConfig, Trainer

TRAIN = dict(model="builtin", steps=2, batch_size=8, lr=1e-4, warmup=1, workers=0, log_every=1, threads=1)
METHODS = ("negclip", "clic", "degla", "ce-clip", "fsc-clip", "tripletclip")
PROTOCOLS = ("global", "sgi")
PLAN = """out = "{out}/plan"
[models]
builtin = "builtin"
[train.tfl]
method = "tflocal"
model = "builtin"
data = "world@flat"
n = 16
steps = 2
batch_size = 4
[benchmarks]
ctrl = "ctrl:{bench}"
[protocols]
TFL = "head:train.tfl"
"""


def _stage(name: str, t0: list[float], rank: int) -> None:
    """Say when each stage ended (in each rank's own log): a failure's log shows how far it got."""
    now = time.perf_counter()
    print(f"rank {rank}: {name} done in {now - t0[0]:.1f} s", flush=True)
    t0[0] = now


if __name__ == "__main__":
    out, bench, suite = sys.argv[1], sys.argv[2], sys.argv[3]
    t0, rank = [time.perf_counter()], int(os.environ.get("RANK", "0"))
    for method in METHODS:
        Trainer(TrainConfig.for_method(method, device="cpu", **TRAIN), f"{out}/train-{method}").fit(progress=False)
        _stage(f"train {method}", t0, rank)
    for protocol in PROTOCOLS:
        evaluate("builtin", f"ctrl:{bench}", protocol, out=f"{out}/eval-{protocol}.json", progress=False)
        _stage(f"eval {protocol}", t0, rank)
    run_suite("builtin", suite, list(PROTOCOLS), f"{out}/suite", progress=False)
    _stage("suite", t0, rank)
    plan = f"{out}/plan-{rank}.toml"
    with open(plan, "w") as f:
        f.write(PLAN.format(out=out, bench=bench))
    run_plan(plan, progress=False)
    _stage("plan", t0, rank)
    dist.finish()
    _stage("finish", t0, rank)
