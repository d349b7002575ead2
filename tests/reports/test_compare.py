"""`unbag compare`: two results on the same items, with known differences, and a refusal."""
import json

import numpy as np
import pytest
import torch

from unbag.cli import main
from unbag.errors import UnbagError
from unbag.reports.compare import compare, mcnemar
from unbag.utils import items_hash


def _write(d, name, right, ids=None, bench=None):
    """A results file and its per-item file: ctrl-shaped items, `group` right where `right` is 1."""
    ids = ids or [f"ood-color-{i:04d}" for i in range(len(right))]
    recs = [{"id": i, "split": "ood", "category": "color", "scores": [[0.0]], "group": float(r),
             "ties": []} for i, r in zip(ids, right)]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    (d / f"{name}.items.jsonl").write_bytes(data)
    mean = sum(right) / len(right)
    res = {"model": name, "protocol": "global", "benchmark": bench or {"name": "ctrl", "spec": "ctrl", "seed": 0},
           "metrics": {k: mean for k in ("ood/color/group", "ood/all/group", "all/color/group", "all/all/group")},
           "per_item": f"{name}.items.jsonl", "per_item_sha256": items_hash(data)}
    (d / f"{name}.json").write_text(json.dumps(res))
    return d / f"{name}.json"


A = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
B = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]


def test_mcnemar_matches_the_binomial_by_hand():
    # 4 discordant one way, 1 the other: 2 * P(X <= 1), X ~ Bin(5, 1/2) = 2 * 6 / 32
    assert mcnemar(4, 1) == pytest.approx(0.375)
    assert mcnemar(0, 0) == 1.0 and mcnemar(3, 3) == 1.0
    assert mcnemar(10, 0) == pytest.approx(2 / 1024)


def test_two_cells_with_known_differences(tmp_path):
    a, b = _write(tmp_path, "a", A), _write(tmp_path, "b", B)
    c = compare(a, b)
    assert c["metric"] == "all/all/group"
    assert c["difference"] == pytest.approx(0.3) and c["a"]["value"] == pytest.approx(0.8)
    assert c["only_a"] == [f"ood-color-{i:04d}" for i in (4, 5, 6, 7)] and c["only_b"] == ["ood-color-0008"]
    assert c["mcnemar_p"] == pytest.approx(0.375)
    # the paired bootstrap by hand: the same draws of the ten items for A and B
    g = torch.Generator().manual_seed(0)
    draws = torch.randint(10, (1000, 10), generator=g).numpy()
    d = np.array(A, float)[draws].mean(1) - np.array(B, float)[draws].mean(1)
    assert c["difference_interval"] == pytest.approx([np.percentile(d, 2.5), np.percentile(d, 97.5)], abs=1e-5)
    assert c["difference_interval"][0] <= 0.3 <= c["difference_interval"][1]
    # one direction or the other: the same numbers, mirrored
    r = compare(b, a)
    assert r["difference"] == pytest.approx(-0.3) and r["only_a"] == c["only_b"]


def test_results_on_different_items_are_refused(tmp_path):
    a = _write(tmp_path, "a", A)
    other_ids = _write(tmp_path, "b", B, ids=[f"ood-color-{i:04d}" for i in range(1, 11)])
    with pytest.raises(UnbagError, match="not results on the same items: 2 item\\(s\\) in one only"):
        compare(a, other_ids)
    other_seed = _write(tmp_path, "c", B, bench={"name": "ctrl", "spec": "ctrl", "seed": 1})
    with pytest.raises(UnbagError, match=r"benchmark.seed is 0 and 1"):
        compare(a, other_seed)
    (tmp_path / "a.items.jsonl").write_text("changed\n")
    with pytest.raises(UnbagError, match="changed since"):
        compare(a, _write(tmp_path, "d", B))


def test_a_metric_it_cannot_recompute_is_refused(tmp_path):
    a, b = _write(tmp_path, "a", A), _write(tmp_path, "b", B)
    with pytest.raises(UnbagError, match="--metric 'ood/all/pair_acc'"):
        compare(a, b, metric="ood/all/pair_acc")


@pytest.mark.slow
def test_compare_on_two_evaluated_cells(tiny_bench, tmp_path, capsys):
    from unbag.evaluation import evaluate

    for p in ("global", "sgi"):
        evaluate("builtin", f"ctrl:{tiny_bench}", p, out=str(tmp_path / f"{p}.json"), progress=False)
    main(["compare", str(tmp_path / "sgi.json"), str(tmp_path / "global.json"), "--metric", "ood/all/group"])
    out = capsys.readouterr().out
    assert "A - B =" in out and "exact McNemar p" in out
    c = compare(tmp_path / "sgi.json", tmp_path / "global.json", metric="ood/all/group")
    rows = {p: {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / f"{p}.items.jsonl").read_text().splitlines()}
            for p in ("sgi", "global")}
    assert c["only_a"] == [i for i, r in rows["sgi"].items() if r["split"] == "ood" and r["group"] == 1
                           and rows["global"][i]["group"] == 0]


@pytest.mark.parametrize("name", ["/etc/passwd", "../a.items.jsonl", "sub/a.items.jsonl", "a.json", ".."])
def test_compare_reads_only_the_items_file_beside_the_results(tmp_path, name):
    a, b = _write(tmp_path, "a", A), _write(tmp_path, "b", B)
    res = json.loads(a.read_text())
    res["per_item"] = name
    a.write_text(json.dumps(res))
    with pytest.raises(UnbagError, match="field 'per_item' must name the .items.jsonl file unbag wrote beside it"):
        compare(a, b)


def test_compare_requires_the_recorded_hash_and_finite_metrics(tmp_path):
    a, b = _write(tmp_path, "a", A), _write(tmp_path, "b", B)
    res = json.loads(a.read_text())
    del res["per_item_sha256"]
    a.write_text(json.dumps(res))
    with pytest.raises(UnbagError, match="'per_item_sha256' is missing"):
        compare(a, b)
    a = _write(tmp_path, "a", A)
    res = json.loads(a.read_text())
    res["metrics"]["all/all/group"] = float("nan")
    a.write_text(json.dumps(res))
    with pytest.raises(UnbagError, match=r"metrics\['all/all/group'\] is nan, not a finite number"):
        compare(a, b)


def test_results_on_two_copies_of_a_release_say_why_they_are_not_paired(tmp_path):
    a = _write(tmp_path, "a", A, bench={"name": "sugarcrepe", "spec": "sugarcrepe:/x", "files": "1a2b" * 16})
    b = _write(tmp_path, "b", B, bench={"name": "sugarcrepe", "spec": "sugarcrepe:/y", "files": "9f8e" * 16})
    with pytest.raises(UnbagError, match=r"read different files \(benchmark.files 1a2b1a2b1a2b\.\.\. and 9f8e9f8e9f8e"
                                         r"\.\.\.\): another copy or version of the release"):
        compare(a, b)


def test_compare_recomputes_a_headline_composed_of_subsets(tmp_path):
    ids = [f"x-{i}" for i in range(10)]
    recs = [{"id": i, "subset": "s1" if k < 5 else "s2", "scores": [[0.0, 0.0]], "acc": float(r), "ties": []}
            for k, (i, r) in enumerate(zip(ids, A))]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    composed = {"group=g/acc": {"s1/acc": 0.5, "s2/acc": 0.5}}
    paths = []
    for name, right in (("a", A), ("b", B)):
        recs = [{**r, "acc": float(x)} for r, x in zip(recs, right)]
        data = "".join(json.dumps(r) + "\n" for r in recs).encode()
        (tmp_path / f"{name}.items.jsonl").write_bytes(data)
        s1, s2 = sum(right[:5]) / 5, sum(right[5:]) / 5
        res = {"model": name, "protocol": "global", "benchmark": {"name": "whatsup", "spec": "whatsup:x"},
               "metrics": {"s1/acc": s1, "s2/acc": s2, "group=g/acc": (s1 + s2) / 2}, "composed": composed,
               "per_item": f"{name}.items.jsonl", "per_item_sha256": items_hash(data)}
        (tmp_path / f"{name}.json").write_text(json.dumps(res))
        paths.append(tmp_path / f"{name}.json")
    c = compare(*paths, metric="group=g/acc")
    assert c["difference"] == pytest.approx((1.0 + 0.6) / 2 - (0.8 + 0.2) / 2)


def test_compare_takes_whatsups_own_default_headline(whatsup_dir, tmp_path):
    from unbag.evaluation import evaluate

    a = evaluate("builtin", f"whatsup:{whatsup_dir}", out=str(tmp_path / "a.json"), progress=False)
    evaluate("open_clip:unbag-tiny@random", f"whatsup:{whatsup_dir}", out=str(tmp_path / "b.json"), progress=False)
    c = compare(tmp_path / "a.json", tmp_path / "b.json")
    assert c["metric"] == "group=whatsup/acc_official" and c["a"]["value"] == pytest.approx(a["metrics"][c["metric"]])
