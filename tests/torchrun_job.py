"""Run under torchrun by tests/test_torchrun.py: every multi-process path in one launch.

Usage: torchrun --nproc_per_node 2 tests/torchrun_job.py OUT BENCH_DIR
Trains negclip, clic and degla for a few steps (OUT/train-METHOD) and evaluates the built-in
model on BENCH_DIR under global and SGI (OUT/eval-PROTOCOL.json), as `unbag train` and `unbag eval`
do under torchrun.
"""
import sys

from unbag import dist
from unbag.evaluation import evaluate
from unbag.training.engine import TrainConfig, Trainer

TRAIN = dict(model="builtin", steps=3, batch_size=8, lr=1e-4, warmup=1, workers=0, log_every=1, threads=1)
METHODS = ("negclip", "clic", "degla")
PROTOCOLS = ("global", "sgi")

if __name__ == "__main__":
    out, bench = sys.argv[1], sys.argv[2]
    for method in METHODS:
        Trainer(TrainConfig.for_method(method, device="cpu", **TRAIN), f"{out}/train-{method}").fit(progress=False)
    for protocol in PROTOCOLS:
        evaluate("builtin", f"ctrl:{bench}", protocol, out=f"{out}/eval-{protocol}.json", progress=False)
    dist.finish()
