"""Evaluation under torchrun: 2 gloo processes give exactly the 1-process results."""
import json
import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("protocol", ["global", "sgi"])
def test_two_processes_give_the_one_process_results(tiny_bench, tmp_path, protocol):
    from unbag.evaluation import evaluate

    one = evaluate("builtin", f"ctrl:{tiny_bench}", protocol, out=str(tmp_path / "one.json"), progress=False)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "unbag",
           "eval", "--model", "builtin", "--bench", f"ctrl:{tiny_bench}", "--protocol", protocol,
           "--device", "cpu", "--out", str(tmp_path / "two.json"), "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    two = json.loads((tmp_path / "two.json").read_text())
    assert two["metrics"] == one["metrics"] and two["ties"] == one["ties"]
    assert two["config"]["processes"] == 2
    a = [json.loads(x) for x in (tmp_path / "one.items.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "two.items.jsonl").read_text().splitlines()]
    assert [x["id"] for x in a] == [x["id"] for x in b]
    for x, y in zip(a, b):
        assert sum(x["scores"], []) == pytest.approx(sum(y["scores"], []), abs=1e-5)
