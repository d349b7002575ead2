"""Protocol ttm (Test-Time Matching, arXiv 2510.07632): pseudo-labels by hand, its adaptation, its labels."""
import json

import pytest
import torch

from unbag.errors import UnbagError
from unbag.evaluation import evaluate
from unbag.ttm import TTMConfig, pseudo_pairs


def T(*rows):
    return torch.tensor(rows, dtype=torch.float64).view(-1, 2, 2)


CASES = T([[0.9, 0.1], [0.2, 0.8]], [[0.30, 0.20], [0.35, 0.28]], [[0.5, 0.4], [0.6, 0.7]],
          [[0.5, 0.5], [0.5, 0.5]], [[0.2, 0.6], [0.7, 0.1]], [[0.30, 0.28], [0.31, 0.25]])
IDENTITY, SWAP = [(0, 0), (1, 1)], [(0, 1), (1, 0)]


def test_pseudo_pairs_by_hand():
    # margins +1.40, +0.03, +0.20, 0, -1.00, -0.04
    assert pseudo_pairs(CASES, 0.5) == [(0, IDENTITY), (4, SWAP)]  # E's swap is wrong, and taken
    # at 0 every group but the exact tie D (the released code would give D the true pairing)
    assert pseudo_pairs(CASES, 0.0) == [(0, IDENTITY), (1, IDENTITY), (2, IDENTITY), (4, SWAP), (5, SWAP)]
    one = torch.tensor([[[0.31, 0.29, 0.33, 0.10]]])  # caption 0 is true; caption 2 leads by 0.02
    assert pseudo_pairs(one, 0.02 - 1e-9) == [(0, [(0, 2)])] and pseudo_pairs(one, 0.05) == []
    assert pseudo_pairs(torch.tensor([[[0.3, 0.3, 0.1]]]), 0.0) == []  # a tie: skipped


def test_ttm_alone_takes_the_defaults():
    from unbag import protocols
    p, arg = protocols.lookup("ttm")
    assert p.transductive and arg == "" and protocols.lookup("ttm:rounds=2")[1] == "rounds=2"


def test_config_schedule_and_options():
    cfg = TTMConfig()
    assert [round(x, 4) for x in cfg.thresholds()] == [2.0, 1.7778, 1.5556, 1.3333, 1.1111, 0.8889, 0.6667,
                                                       0.4444, 0.2222, 0.0]
    assert (cfg.rounds, cfg.epochs, cfg.batch_groups, cfg.lr, cfg.seed) == (10, 30, 50, 1e-5, 42)
    assert TTMConfig.parse("rounds=2,lr=1e-4") == TTMConfig(rounds=2, lr=1e-4)
    with pytest.raises(UnbagError, match="KEY=VALUE"):
        TTMConfig.parse("speed=3")


@pytest.mark.parametrize("fixture", ["tiny_bench", "winoground_dir", "eqben_dir"])
def test_ttm_adapts_a_copy_and_says_it_is_transductive(fixture, request, tmp_path):
    from unbag import models
    root = request.getfixturevalue(fixture)
    spec = {"tiny_bench": f"ctrl:{root}", "winoground_dir": f"winoground:{root}", "eqben_dir": f"eqben:{root}"}[fixture]
    backend = models.load("builtin")
    before = {k: v.clone() for k, v in backend.model.state_dict().items()}
    res = evaluate(backend, spec, "ttm:rounds=2,epochs=2,lr=1e-4", out=str(tmp_path / "r.json"), progress=False)
    assert all(torch.equal(before[k], v) for k, v in backend.model.state_dict().items())  # the user's model as it was
    assert res["transductive"] is True
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["transductive"] is True and saved["config"]["options"]["ttm"]["rounds"] == 2
    rounds = saved["config"]["options"]["adaptations"]
    assert rounds and all(len(a["groups_per_round"]) == 2 for a in rounds) and sum(a["pairs_trained"] for a in rounds) > 0
    plain = evaluate(backend, spec, "global", progress=False)
    assert "transductive" not in plain and set(plain["metrics"]) == set(res["metrics"])


def test_every_table_labels_it_transductive(capsys):
    from unbag.reports.table import labelled, print_grids, suite_table
    assert labelled("ttm", {"recipe": "paper", "transductive": True}) == "ttm [paper, transductive]"
    assert labelled("global", {"recipe": "paper"}) == "global [paper]"
    res = {"benchmark": {"name": "winoground"}, "metrics": {"all/group": 0.5}, "recipe": "paper"}
    head, _, _ = suite_table([("m", "global", res, None), ("m", "ttm", res | {"transductive": True}, None)])
    assert head[2:] == ["m · global [paper]", "m · ttm [paper, transductive]"]
    ctrl = {"benchmark": {"name": "ctrl"}, "metrics": {"ood/color/group": 0.5}, "transductive": True}
    print_grids([("m", "ttm", ctrl, None)])
    assert "ttm (transductive)" in capsys.readouterr().out
