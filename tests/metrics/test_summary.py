import pytest
import torch

from unbag.metrics import aggregate, summarize


def _items(values, ties):
    return {"acc": torch.tensor(values), "tie/acc": torch.tensor(ties)}


def test_summarize_gives_subsets_micro_and_macro():
    # subset a: 1, 0 (one tie); subset b: 1, 1, 1
    per_item = _items([1.0, 0.0, 1.0, 1.0, 1.0], [False, True, False, False, False])
    out, ties, counts = summarize(per_item, ["a", "a", "b", "b", "b"], ("acc",))
    assert out == pytest.approx({"a/acc": 0.5, "b/acc": 1.0, "all/acc": 0.8, "macro/acc": 0.75})
    assert ties == {"a/acc": 1, "b/acc": 0, "all/acc": 1}
    assert counts == {"a": 2, "b": 3, "all": 5, "macro": 2}


def test_summarize_macro_over_the_chosen_subsets_only():
    per_item = _items([1.0, 0.0, 0.0], [False] * 3)
    out, _, counts = summarize(per_item, ["a", "b", "c"], ("acc",), macro=["a", "b"])
    assert out["macro/acc"] == 0.5 and counts["macro"] == 2 and out["all/acc"] == pytest.approx(1 / 3)


def test_aggregate_fills_every_split_and_category_level():
    per_item = _items([1.0, 0.0, 1.0], [False, True, False])
    groups = [{"split": "id", "category": "color"}, {"split": "ood", "category": "color"},
              {"split": "ood", "category": "size"}]
    out, ties, counts = aggregate(per_item, groups, ("acc",))
    assert out["id/color/acc"] == 1.0 and out["ood/all/acc"] == 0.5 and out["all/color/acc"] == 0.5
    assert out["all/all/acc"] == pytest.approx(2 / 3) and ties["all/color/acc"] == 1
    assert counts == {"id/color": 1, "id/all": 1, "ood/color": 1, "ood/size": 1, "ood/all": 2,
                      "all/color": 2, "all/size": 1, "all/all": 3}
