"""Run under torchrun by tests/test_torchrun.py: every multi-process path in one launch.

Usage: torchrun --nproc_per_node 2 tests/torchrun_job.py OUT BENCH_DIR SUITE_ROOT
Trains negclip, clic, degla, ce-clip, fsc-clip and tripletclip for a few steps (OUT/train-METHOD), evaluates the built-in model
on BENCH_DIR under global and SGI (OUT/eval-PROTOCOL.json) and runs the suite found under
SUITE_ROOT (OUT/suite), as `unbag train`, `unbag eval` and `unbag suite` do under torchrun.
"""
import sys

from unbag import dist
from unbag.evaluation import evaluate
from unbag.suite_root import run_suite
from unbag.training.engine import TrainConfig, Trainer

TRAIN = dict(model="builtin", steps=3, batch_size=8, lr=1e-4, warmup=1, workers=0, log_every=1, threads=1)
METHODS = ("negclip", "clic", "degla", "ce-clip", "fsc-clip", "tripletclip")
PROTOCOLS = ("global", "sgi")

if __name__ == "__main__":
    out, bench, suite = sys.argv[1], sys.argv[2], sys.argv[3]
    for method in METHODS:
        Trainer(TrainConfig.for_method(method, device="cpu", **TRAIN), f"{out}/train-{method}").fit(progress=False)
    for protocol in PROTOCOLS:
        evaluate("builtin", f"ctrl:{bench}", protocol, out=f"{out}/eval-{protocol}.json", progress=False)
    run_suite("builtin", suite, list(PROTOCOLS), f"{out}/suite", progress=False)
    dist.finish()
