import pytest
import torch

from unbag.benchmarks import load
from unbag.metrics.retrieval import ranks, recall


def test_ranks_hand_computed_with_ties_against_the_model():
    sim = torch.tensor([[0.9, 0.5, 0.1],
                        [0.5, 0.5, 0.2],   # the right text (1) ties a wrong one: rank 2
                        [0.3, 0.8, 0.1]])  # right text (2) is last: rank 3
    pos = torch.eye(3, dtype=torch.bool)
    assert ranks(sim, pos).tolist() == [1, 2, 3]
    two = pos.clone()
    two[2, 1] = True  # a second right text for image 2: its best right one counts
    assert ranks(sim, two).tolist() == [1, 2, 1]


def test_recall_both_ways():
    sim = torch.tensor([[0.9, 0.1], [0.8, 0.2]])  # both images prefer text 0
    r = recall(sim, [[0], [1]], ks=(1, 2))
    assert r["i2t/R@1"] == pytest.approx(0.5) and r["i2t/R@2"] == 1.0
    # text 0 -> image 0 (0.9 > 0.8): right; text 1 -> image 1 (0.2 > 0.1): right
    assert r["t2i/R@1"] == 1.0


def test_ctrl_retrieval_merges_identical_captions():
    # merging is the same for every world: the flat one draws 300 scenes in a fraction of a second
    # (3D: about 10 s) and some of its captions repeat
    b = load("ctrl-retrieval@flat:300")
    assert len(b.images) == 300 and len(b.texts) < 300
    assert all(len(ts) == 1 for ts in b.image_texts)
    assert len({t for ts in b.image_texts for t in ts}) == len(b.texts)
