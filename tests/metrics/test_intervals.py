"""95% intervals: Wilson against hand-computed values, the bootstrap against a plain loop."""
import math

import numpy as np
import pytest
import torch

from unbag.metrics.intervals import (
    RESAMPLES,
    SEED,
    Part,
    item_intervals,
    percentile,
    query_intervals,
    resample_counts,
    wilson,
)


@pytest.mark.parametrize("k, n, lo, hi", [
    # p = 0.8: centre (0.8 + 1.92/10) / 1.384 = 0.71674, half 1.416 * sqrt(0.016 + 0.0096) = 0.22658
    (8, 10, 0.49016, 0.94332),
    # p = 0: [0, z^2 / (n + z^2)] = [0, 3.8415 / 13.8415]
    (0, 10, 0.0, 0.27753),
    (10, 10, 0.72247, 1.0),
    # p = 0.5, n = 100: 0.5 -+ 1.96 / 1.0384 * sqrt(0.0025 + 0.000096)
    (50, 100, 0.40383, 0.59617),
])
def test_wilson_matches_the_hand_computed_interval(k, n, lo, hi):
    got = wilson(k, n)
    assert got == pytest.approx((lo, hi), abs=1e-4)


def test_wilson_of_no_trial_is_the_whole_range():
    assert wilson(0, 0) == (0.0, 1.0)


def _loop_bootstrap(values: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The percentile bootstrap written out: the same draws, one resample at a time."""
    g = torch.Generator().manual_seed(seed)
    draws = torch.randint(len(values), (resamples, len(values)), generator=g).numpy()
    means = [values[row].mean() for row in draws]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def test_the_vectorised_bootstrap_is_the_plain_loop():
    v = np.array([0.2, 0.4, 0.9, 0.1, 0.75, 0.3])
    parts = {"all/ap": Part("mean", "ap", tuple(range(6)))}
    got, how = item_intervals({"ap": torch.tensor(v, dtype=torch.float32)}, parts, 6, resamples=500, seed=3)
    assert how == {"all/ap": "bootstrap"}
    assert got["all/ap"] == pytest.approx(_loop_bootstrap(v, 500, 3), abs=1e-5)


def test_a_binary_bucket_gets_wilson_and_a_macro_the_bootstrap_of_its_subsets():
    right = torch.tensor([1., 0., 1., 1., 0., 0., 1., 1.])
    parts = {"a/acc": Part("mean", "acc", (0, 1, 2, 3)), "b/acc": Part("mean", "acc", (4, 5, 6, 7)),
             "macro/acc": Part("macro", "acc", of=("a/acc", "b/acc"))}
    got, how = item_intervals({"acc": right}, parts, 8, resamples=400, seed=1)
    assert how == {"a/acc": "wilson", "b/acc": "wilson", "macro/acc": "bootstrap"}
    assert got["a/acc"] == pytest.approx(wilson(3, 4), abs=1e-6)
    # the macro by hand: each resample of the 8 items, the mean of its two subsets' means
    counts = resample_counts(8, 400, 1).numpy()
    a, b = counts[:, :4], counts[:, 4:]
    macro = ((a @ right[:4].numpy()) / a.sum(1) + (b @ right[4:].numpy()) / b.sum(1)) / 2
    macro = macro[~np.isnan(macro)]
    assert got["macro/acc"] == pytest.approx((np.percentile(macro, 2.5), np.percentile(macro, 97.5)), abs=1e-5)


def test_a_bootstrap_is_seeded_and_its_interval_holds_the_estimate_and_narrows_with_items():
    rng = np.random.default_rng(0)
    small, large = rng.random(20), rng.random(2000)
    get = lambda v, seed=SEED: item_intervals({"x": torch.tensor(v, dtype=torch.float32)},  # noqa: E731
                                              {"k": Part("mean", "x", tuple(range(len(v))))}, len(v), seed=seed)[0]["k"]
    assert get(small) == get(small) and get(small) != get(small, seed=SEED + 1)
    lo, hi = get(small)
    assert lo <= small.mean() <= hi
    lo2, hi2 = get(large)
    assert hi2 - lo2 < (hi - lo) / 5


def test_clustered_items_are_resampled_together():
    # two clusters of two items each, all right in one, all wrong in the other: a resample holds
    # whole clusters, so its mean is 0, 1/2 or 1, never 1/4 or 3/4
    v = torch.tensor([1., 1., 0., 0.])
    parts = {"all/acc": Part("mean", "acc", (0, 1, 2, 3))}
    seen = []
    item_intervals({"acc": v}, parts, 4, clusters=["a", "a", "b", "b"],
                   breakdown=lambda draw: seen.append([i for i, _ in draw]) or {"pairs": 0.0}, breakdown_keys=("pairs",))
    assert seen and all(len(d) == 4 and d[:2] in ([0, 1], [2, 3]) and d[2:] in ([0, 1], [2, 3]) for d in seen)
    got, how = item_intervals({"acc": v}, parts, 4, clusters=["a", "a", "b", "b"])
    assert how["all/acc"] == "bootstrap" and got["all/acc"] == [0.0, 1.0]


def test_a_bucket_no_resample_holds_is_left_out_of_the_percentiles():
    assert percentile(torch.tensor([math.nan, 0.5, 0.5])) == (0.5, 0.5)
    assert all(math.isnan(x) for x in percentile(torch.tensor([math.nan])))


def test_retrieval_recall_gets_a_bootstrap_over_its_queries():
    from unbag.metrics.retrieval import recall

    sim = torch.eye(4) + 0.01 * torch.arange(16.).view(4, 4)
    sim[3] = torch.tensor([0.9, 0.0, 0.0, 0.5])  # image 3 ranks text 0 first: wrong at R@1
    got, bounds, how = recall(sim, [[0], [1], [2], [3]], ks=(1,), intervals=True)
    assert got["i2t/R@1"] == 0.75 and how["i2t/R@1"] == "bootstrap"
    assert bounds["i2t/R@1"] == query_intervals({"k": torch.tensor([1., 1., 1., 0.])})[0]["k"]
    assert bounds["i2t/R@1"][0] <= 0.75 <= bounds["i2t/R@1"][1] and RESAMPLES == 1000
