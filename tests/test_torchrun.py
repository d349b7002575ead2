"""Under torchrun, 2 gloo processes follow 1 process: training with the same global batch, and
sharded evaluation. One launch runs every multi-process path (tests/torchrun_job.py)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from unbag.evaluation import evaluate
from unbag.training.engine import TrainConfig, Trainer

JOB = Path(__file__).resolve().parent / "torchrun_job.py"


pytestmark = pytest.mark.slow  # every test here starts processes and trains


def _job():
    import importlib.util
    spec = importlib.util.spec_from_file_location("torchrun_job", JOB)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_JOB = _job()
METHODS, PROTOCOLS, TRAIN = _JOB.METHODS, _JOB.PROTOCOLS, _JOB.TRAIN


@pytest.fixture(scope="module")
def suite_root(winoground_dir, crepe_dir, imagecode_dir, cola_dir, tmp_path_factory):
    """Items of every shape: 2x2, one image x K captions (crops), K images x one caption, ragged K."""
    root = tmp_path_factory.mktemp("suite")
    for name, src in (("winoground", winoground_dir), ("crepe", crepe_dir), ("imagecode", imagecode_dir),
                      ("cola", cola_dir)):
        shutil.copytree(src, root / name)
    return root


def _launch(out, tiny_bench, suite_root):
    logs = out / "logs"  # every rank's own stdout and stderr, kept: a failure shows each, not rank 0's alone
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "--log-dir", str(logs), "--redirects", "3", str(JOB), str(out), str(tiny_bench), str(suite_root)]
    # a rank that dies of a signal (a native crash, an abort) prints every thread's Python stack
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if r.returncode:
        ranks = "\n".join(f"--- {f.relative_to(logs)}:\n{f.read_text()[-3000:]}" for f in sorted(logs.rglob("*.log")))
        pytest.fail(f"torchrun exited {r.returncode}\n{ranks}\n--- torchrun:\n{r.stderr[-3000:]}")


@pytest.fixture(scope="module")
def two(tiny_bench, suite_root, tmp_path_factory, worker_id):
    """The one torchrun launch, shared by this session's pytest-xdist workers (whichever runs a test
    here first launches it; its fixtures are built from the same seeds in every worker)."""
    if worker_id == "master":
        out = tmp_path_factory.mktemp("torchrun")
        _launch(out, tiny_bench, suite_root)
        return out
    from filelock import FileLock
    out = tmp_path_factory.getbasetemp().parent / "torchrun-shared"  # this session's, for every worker
    with FileLock(str(out) + ".lock"):
        if not (out / "done").is_file():
            shutil.rmtree(out, ignore_errors=True)  # a launch that failed before: launch again
            out.mkdir()
            _launch(out, tiny_bench, suite_root)
            (out / "done").touch()
    return out

def _log(out):
    return [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("method", METHODS)
def test_two_gloo_processes_train_as_one(two, method, tmp_path):
    one = tmp_path / "one"
    Trainer(TrainConfig.for_method(method, device="cpu", **TRAIN), one).fit(progress=False)
    a, b = _log(one), _log(two / f"train-{method}")
    assert len(a) == len(b) == TRAIN["steps"]  # the second step starts from the first one's update
    for x, y in zip(a, b):
        assert y["loss"] == pytest.approx(x["loss"], rel=1e-4, abs=1e-5)
        assert y["grad_norm"] == pytest.approx(x["grad_norm"], rel=1e-3, abs=1e-5)
    assert json.loads((two / f"train-{method}" / "config.json").read_text())["processes"] == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_two_processes_evaluate_as_one(two, tiny_bench, tmp_path, protocol):
    one = evaluate("builtin", f"ctrl:{tiny_bench}", protocol, out=str(tmp_path / "one.json"), progress=False)
    res = json.loads((two / f"eval-{protocol}.json").read_text())
    assert res["metrics"] == one["metrics"] and res["ties"] == one["ties"] and res["config"]["processes"] == 2
    a = [json.loads(x) for x in (tmp_path / "one.items.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (two / f"eval-{protocol}.items.jsonl").read_text().splitlines()]
    assert [x["id"] for x in a] == [x["id"] for x in b]
    for x, y in zip(a, b):
        assert sum(x["scores"], []) == pytest.approx(sum(y["scores"], []), abs=1e-5)


def test_two_processes_run_the_suite_as_one(two, suite_root, tmp_path):
    from unbag.suite_root import run_suite
    one, _, _ = run_suite("builtin", suite_root, list(PROTOCOLS), tmp_path / "one", progress=False)
    by_cell = {json.dumps(r["cell"], sort_keys=True): r for r in one}
    two_files = sorted((two / "suite" / "results").glob("*.json"))
    assert len(two_files) == len(one) == 2 * 4
    for f in two_files:
        res = json.loads(f.read_text())
        ref = by_cell[json.dumps(res["cell"], sort_keys=True)]
        assert res["config"]["processes"] == 2 and ref["config"]["processes"] == 1
        assert res["metrics"].keys() == ref["metrics"].keys()
        for k, v in ref["metrics"].items():
            assert res["metrics"][k] == pytest.approx(v, abs=1e-6), (f.name, k)


def test_two_processes_run_a_plan_that_trains_a_head(two, tiny_bench, tmp_path):
    """Rank 0 alone trains the plan's head; both score with it, as one process does with that head."""
    head = two / "plan" / "train" / "tfl" / "head"
    res = json.loads((two / "plan" / "results" / "builtin__ctrl__TFL.json").read_text())
    one = evaluate("builtin", f"ctrl:{tiny_bench}", f"head:{head}", out=str(tmp_path / "one.json"), progress=False)
    assert res["config"]["processes"] == 2 and one["config"]["processes"] == 1
    assert res["metrics"] == pytest.approx(one["metrics"], abs=1e-6)
