import pytest
import torch

from unbag.metrics import aggregate, winoground


def T(*rows):
    return torch.tensor(rows, dtype=torch.float32).view(-1, 2, 2)


def test_hand_computed_cases():
    # scores[n, image, caption]
    s = T([[0.9, 0.1], [0.2, 0.8]],   # all correct
          [[0.5, 0.6], [0.2, 0.8]],   # image 0 prefers caption 1 -> text wrong; image ok
          [[0.5, 0.1], [0.6, 0.8]],   # caption 0 prefers image 1 -> image wrong; text ok
          [[0.1, 0.9], [0.8, 0.2]])   # everything reversed
    r = winoground(s)
    assert r["text"].tolist() == [1, 0, 1, 0]
    assert r["image"].tolist() == [1, 1, 0, 0]
    assert r["group"].tolist() == [1, 0, 0, 0]
    assert r["pair"].tolist() == [1, 0.5, 1, 0]
    assert not r["tie/group"].any()


def test_ties_are_wrong_and_counted():
    s = T([[0.5, 0.5], [0.1, 0.9]],   # text tie on image 0
          [[0.7, 0.1], [0.7, 0.9]],   # image tie on caption 0
          [[0.3, 0.3], [0.3, 0.3]])   # a bag of words: everything ties
    r = winoground(s)
    assert r["text"].tolist() == [0, 1, 0]
    assert r["image"].tolist() == [1, 0, 0]
    assert r["group"].tolist() == [0, 0, 0]
    assert r["pair"].tolist() == [0.5, 1, 0]
    assert r["tie/text"].tolist() == [True, False, True]
    assert r["tie/image"].tolist() == [False, True, True]
    assert r["tie/group"].tolist() == [True, True, True]


def test_matches_official_definition_on_random_scores():
    # the official Winoground definition, written out per item with Python floats
    g = torch.Generator().manual_seed(0)
    s = torch.randint(0, 4, (200, 2, 2), generator=g).float()  # many ties on purpose
    r = winoground(s)
    for n in range(len(s)):
        c0_i0, c1_i0, c0_i1, c1_i1 = (float(s[n, 0, 0]), float(s[n, 0, 1]), float(s[n, 1, 0]), float(s[n, 1, 1]))
        text = c0_i0 > c1_i0 and c1_i1 > c0_i1
        image = c0_i0 > c0_i1 and c1_i1 > c1_i0
        assert r["text"][n] == text and r["image"][n] == image and r["group"][n] == (text and image)


def test_shape_is_checked():
    with pytest.raises(ValueError, match=r"\[items, 2, 2\]"):
        winoground(torch.zeros(3, 2, 3))


def test_aggregate_by_split_and_category():
    s = T([[1, 0], [0, 1]], [[0, 1], [1, 0]], [[1, 0], [0, 1]], [[0.5, 0.5], [0, 1]])
    groups = [{"split": "id", "category": "color"}, {"split": "id", "category": "size"},
              {"split": "ood", "category": "color"}, {"split": "ood", "category": "color"}]
    flat, ties, counts = aggregate(winoground(s), groups, ("text", "group"))
    assert flat["id/color/group"] == 1.0 and flat["id/size/group"] == 0.0
    assert flat["ood/color/text"] == 0.5 and flat["id/all/text"] == 0.5
    assert flat["all/color/group"] == pytest.approx(2 / 3) and flat["all/all/group"] == 0.5
    assert ties["ood/color/text"] == 1 and ties["id/all/text"] == 0
    assert counts["ood/color"] == 2 and counts["all/all"] == 4
    assert all(0 <= v <= 1 for v in flat.values())


# Test-Time Matching's cases (arXiv 2510.07632), worked by hand: rows images, columns captions
GM_CASES = [  # S, text, image, group, groupmatch, tie
    ([[0.9, 0.1], [0.2, 0.8]], 1, 1, 1, 1, False),
    ([[0.30, 0.20], [0.35, 0.28]], 0, 0, 0, 1, False),  # image 1 prefers caption 0, the pairing is right
    ([[0.5, 0.4], [0.6, 0.7]], 1, 0, 0, 1, False),
    ([[0.5, 0.5], [0.5, 0.5]], 0, 0, 0, 0, True),  # a tie is wrong under unbag's strict rule
    ([[0.2, 0.6], [0.7, 0.1]], 0, 0, 0, 0, False),
    ([[0.30, 0.28], [0.31, 0.25]], 0, 0, 0, 0, False),
]


def test_groupmatch_hand_computed_beside_the_group_score():
    r = winoground(T(*[c[0] for c in GM_CASES]))
    for key, col in (("text", 1), ("image", 2), ("group", 3), ("groupmatch", 4)):
        assert r[key].tolist() == [c[col] for c in GM_CASES], key
    assert r["tie/groupmatch"].tolist() == [c[5] for c in GM_CASES]
    # it differs from the group score where the pairing is right and a single choice is not
    assert (r["groupmatch"] > r["group"]).tolist() == [False, True, True, False, False, False]


def test_groupmatch_ignores_row_and_column_offsets():
    from unbag.metrics.groupmatch import match_margin
    s = T(*[c[0] for c in GM_CASES]).double()
    shifted = s + torch.tensor([5, -2], dtype=s.dtype)[None, :, None] + torch.tensor([0.3, 7], dtype=s.dtype)[None, None, :]
    assert winoground(shifted)["groupmatch"].tolist() == winoground(s)["groupmatch"].tolist()
    assert torch.allclose(match_margin(shifted), match_margin(s))
    assert torch.allclose(match_margin(s), torch.tensor([1.40, 0.03, 0.20, 0.0, -1.00, -0.04], dtype=s.dtype))


def test_groupmatch_three_by_three_enumerates_pairings():
    from unbag.metrics import group_match
    s = torch.tensor([[[0.5, 0.6, 0.1], [0.35, 0.5, 0.2], [0.1, 0.2, 0.3]]], dtype=torch.float64)
    # pairing totals: identity 1.30, (1,0,2) 1.25, the rest lower: right, though row 0 prefers caption 1
    assert group_match(s)["groupmatch"].tolist() == [1.0]
    s[0, 1, 0] = 0.4  # (1,0,2) now totals 1.30 too: a tie, wrong
    r = group_match(s)
    assert r["groupmatch"].tolist() == [0.0] and r["tie/groupmatch"].tolist() == [True]


def test_groupmatch_chance_level():
    g = torch.Generator().manual_seed(0)
    s = torch.rand(20000, 2, 2, generator=g)
    r = winoground(s)
    assert abs(float(r["group"].mean()) - 1 / 6) < 0.01 and abs(float(r["groupmatch"].mean()) - 1 / 2) < 0.01


def test_groupmatch_refuses_what_it_cannot_score():
    from unbag.metrics import group_match
    with pytest.raises(ValueError, match=r"\[items, k, k\]"):
        group_match(torch.zeros(2, 2, 3))
    with pytest.raises(ValueError, match="over 8"):
        group_match(torch.zeros(1, 9, 9))
