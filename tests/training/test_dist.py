"""A 2-process gloo run under torchrun must follow the 1-process run with the same global batch."""
import json
import os
import subprocess
import sys

import pytest

from unbag.training.engine import TrainConfig, Trainer

ARGS = dict(model="builtin", steps=3, batch_size=8, lr=1e-4, warmup=1, workers=0, log_every=1)


def _log(out):
    return [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("method", ["negclip", "clic", "degla"])
def test_two_gloo_processes_match_one(method, tmp_path):
    one = tmp_path / "one"
    Trainer(TrainConfig.for_method(method, **ARGS), one).fit(progress=False)
    two = tmp_path / "two"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "unbag", "train", "--method", method, "--device", "cpu", "--out", str(two), "--quiet",
           "--threads", "1"]
    for k, v in ARGS.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    a, b = _log(one), _log(two)
    assert len(a) == len(b) == 3
    for x, y in zip(a, b):
        assert y["loss"] == pytest.approx(x["loss"], rel=1e-4, abs=1e-5)
        assert y["grad_norm"] == pytest.approx(x["grad_norm"], rel=1e-3, abs=1e-5)
    assert json.loads((two / "config.json").read_text())["processes"] == 2
