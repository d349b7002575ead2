"""CREPE, EqBen, ImageCoDe, SVO-Probes, NaturalBench-Retrieval and COLA in their official layouts,
and the item-shape metrics they share: every number recomputed by hand from the per-item scores,
planted ties scored by both rules."""
import json
from statistics import fmean

import pytest
import torch

from unbag import benchmarks
from unbag.benchmarks import shapes
from unbag.errors import UnbagError


def _wino(s):
    """Winoground's three scores of one 2x2 record, rows images, columns captions."""
    text = s[0][0] > s[0][1] and s[1][1] > s[1][0]
    image = s[0][0] > s[1][0] and s[1][1] > s[0][1]
    return {"text": float(text), "image": float(image), "group": float(text and image)}


# -- the shapes' metrics on hand-made tensors ---------------------------------------------------

def test_choose_breaks_ties_strictly_and_as_argmax_does():
    s = torch.tensor([[0.5, 0.5, 0.1],   # true 0 tied with a later one: argmax picks it
                      [0.5, 0.5, 0.1],   # true 1 tied with an earlier one: argmax picks 0
                      [0.2, 0.9, 0.1],   # true 1, clear
                      [0.9, 0.2, 0.3]])  # true 2, wrong
    out = shapes.choose(s, torch.tensor([0, 1, 1, 2]))
    assert out["acc"].tolist() == [0, 0, 1, 0] and out["acc_official"].tolist() == [1, 0, 1, 0]
    assert out["tie/acc"].tolist() == [True, True, False, False]
    assert "acc_official" not in shapes.choose(s, torch.tensor([0, 1, 1, 2]), "pair", official=False)


def test_recall_at_ranks_ties_above_the_true_one_or_stably():
    s = torch.tensor([[0.3, 0.3, 0.3, 0.9],   # true 0: one above, two tied after it
                      [0.3, 0.3, 0.3, 0.1],   # true 2: two tied before it
                      [0.8, 0.1, 0.2, 0.3]])  # true 0, first
    out = shapes.recall_at(s, torch.tensor([0, 2, 0]), (1, 2, 3))
    # strict ranks 3, 2, 0; stable ranks 1, 2, 0
    assert out["R@1"].tolist() == [0, 0, 1] and out["R@1_official"].tolist() == [0, 0, 1]
    assert out["R@2"].tolist() == [0, 0, 1] and out["R@2_official"].tolist() == [1, 0, 1]
    assert out["R@3"].tolist() == [0, 1, 1] and out["R@3_official"].tolist() == [1, 1, 1]
    assert out["tie/R@2"].tolist() == [True, False, False]


def test_winoground_on_a_hand_made_2x2():
    s = torch.tensor([[[0.9, 0.1], [0.2, 0.8]],    # all right
                      [[0.9, 0.1], [0.95, 0.96]],  # text right, image wrong (I1 beats I0 on C0)
                      [[0.5, 0.5], [0.2, 0.8]]])   # a tie on image 0's captions: text wrong
    out = shapes.winoground(s)
    assert out["text"].tolist() == [1, 1, 0] and out["image"].tolist() == [1, 0, 1]
    assert out["group"].tolist() == [1, 0, 0] and out["pair"].tolist() == [1, 1, 0.5]
    assert out["tie/text"].tolist() == [False, False, True]


def test_average_precision_strict_and_with_shared_thresholds():
    skm = pytest.importorskip("sklearn.metrics")
    y = torch.tensor([1, 0, 1, 0, 1])
    s = torch.tensor([0.9, 0.5, 0.5, 0.2, 0.5])  # two positives tied with a negative
    out = shapes.average_precision(s[None, :, None], [y])
    # strict: order 0(+) 1(-) 2(+) 4(+) 3(-): (1/1 + 2/3 + 3/4) / 3
    assert out["mAP"].item() == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    # shared threshold: 1/3 * 1 + 2/3 * 3/4
    assert out["mAP_official"].item() == pytest.approx(1 / 3 + 2 / 3 * 3 / 4)
    assert out["mAP_official"].item() == pytest.approx(skm.average_precision_score(y.numpy(), s.numpy()))
    assert out["tie/mAP"].item()
    g = torch.Generator().manual_seed(0)
    for _ in range(20):  # without ties the two agree with each other and with sklearn
        y, s = (torch.rand(9, generator=g) < 0.4).long(), torch.rand(9, generator=g)
        y[0] = 1
        out = shapes.average_precision(s[None, :, None], [y])
        assert out["mAP"].item() == pytest.approx(out["mAP_official"].item())
        assert out["mAP"].item() == pytest.approx(skm.average_precision_score(y.numpy(), s.numpy()))
    with pytest.raises(ValueError, match="without a positive"):
        shapes.average_precision(torch.zeros(1, 3, 1), [torch.zeros(3)])


# -- the benchmarks ------------------------------------------------------------------------------

def test_crepe_recall_from_the_ranks_both_rules(crepe_dir, tmp_path, run_global):
    b = benchmarks.load(f"crepe:{crepe_dir}")
    assert b.info["dropped_missing_image"] == {"prod-swap-4": 1}
    first = next(it for it in b.items if it.group["subset"] == "prod-swap-4" and it.captions[0].startswith("red cube"))
    assert first.captions[1:] == sorted(first.captions[1:])  # a set literal, sorted
    res, items = run_global(f"crepe:{crepe_dir}")
    m = res["metrics"]
    assert {it["subset"] for it in items} == {"prod-swap-4", "prod-negate-5", "syst-laion-seen-atom",
                                               "syst-laion-seen-comp", "syst-laion-seen-combined"}
    tied = next(it for it in items if it["id"] == "prod-swap-4-3")  # the CSV's line 3
    # the caption is also a negative: strictly it can never be first; stably it is above its twin, so
    # at most four of the five negatives precede it
    assert tied["R@1"] == 0.0 and tied["R@5_official"] == 1.0
    for it in items:
        row = it["scores"][0]
        strict, stable = sum(x >= row[0] for x in row[1:]), sum(x > row[0] for x in row[1:])
        for k in (1, 3, 5, 10):
            assert it[f"R@{k}"] == float(strict < k) and it[f"R@{k}_official"] == float(stable < k)
    for k in (1, 3):
        for rule in ("", "_official"):
            assert m[f"all/R@{k}{rule}"] == pytest.approx(fmean([it[f"R@{k}{rule}"] for it in items]))
            subs = sorted({it["subset"] for it in items})
            assert m[f"macro/R@{k}{rule}"] == pytest.approx(
                fmean([fmean([it[f"R@{k}{rule}"] for it in items if it["subset"] == s]) for s in subs]))


def test_crepe_names_a_bad_negatives_cell(crepe_dir, tmp_path):
    import shutil
    root = tmp_path / "c"
    shutil.copytree(crepe_dir, root)
    f = root / "prod_hard_negatives" / "negate" / "prod_vg_hard_negs_negate_complexity_5.csv"
    f.write_text(f.read_text().replace('"[', '"__import__(\'os\')[', 1))
    with pytest.raises(UnbagError, match=r"complexity_5\.csv:2: field 'hard_negs': not a Python list literal"):
        benchmarks.load(f"crepe:{root}")


def test_eqben_samples_from_shuffled_records(eqben_dir, tmp_path, run_global):
    res, items = run_global(f"eqben:{eqben_dir}")
    assert [it["id"] for it in items] == ["eqbenkubric_cnt-18", "eqbenkubric_cnt-19", "eqbenyoucook2-40"]
    npy = next(it for it in items if it["subset"] == "eqbenyoucook2")
    assert _wino(npy["scores"]) == {"text": 0.0, "image": 0.0, "group": 0.0}  # its two frames are one
    m = res["metrics"]
    for it in items:
        assert {k: it[k] for k in ("text", "image", "group")} == _wino(it["scores"])
    for key in ("text", "image", "group"):
        per = {s: fmean([it[key] for it in items if it["subset"] == s]) for s in ("eqbenkubric_cnt", "eqbenyoucook2")}
        assert m[f"eqbenkubric_cnt/{key}"] == pytest.approx(per["eqbenkubric_cnt"])
        assert m[f"macro/{key}"] == pytest.approx(fmean(list(per.values())))
        assert f"{key}_official" not in " ".join(m)  # the official rule is unbag's


def test_eqben_refuses_a_sample_missing_a_pairing(eqben_dir, tmp_path):
    import shutil
    root = tmp_path / "e"
    shutil.copytree(eqben_dir, root)
    f = root / "annotation" / "ann_json_finegrained_random.json"
    recs = json.loads(f.read_text())
    drop = next(k for k, r in enumerate(recs) if r["private_info"]["sample_cnt"] == 18 and r["private_info"]["name"] == "c1i0")
    f.write_text(json.dumps(recs[:drop] + recs[drop + 1:]))
    with pytest.raises(UnbagError, match="sample 18 of eqbenkubric_cnt: has c0i0, c0i1, c1i1"):
        benchmarks.load(f"eqben:{root}")


def test_imagecode_orders_frames_numerically_and_ties_count_both_ways(imagecode_dir, tmp_path, run_global):
    b = benchmarks.load(f"imagecode:{imagecode_dir}")
    video = next(it for it in b.items if it.id == "video-set_1-3")
    assert [p.rsplit("img", 1)[1] for p in video.images] == [f"{x}.jpg" for x in (2, 3, 7, 9, 12, 25, 45, 60, 80, 100)]
    assert b.info["dropped_missing_image"] == {"video": 1}
    res, items = run_global(f"imagecode:{imagecode_dir}")
    for it in items:
        col = [row[0] for row in it["scores"]]
        label = {"video-set_1-3": 3, "video-set_1-0": 0, "open-images-1_ab-4": 4}[it["id"]]
        assert it["acc"] == float(all(col[label] > x for k, x in enumerate(col) if k != label))
        assert it["acc_official"] == float(max(range(10), key=lambda k: (col[k], -k)) == label)
    static = next(it for it in items if it["subset"] == "static")
    assert static["acc"] == 0.0 and "acc" in static["ties"]  # its target's twin is image 8
    m = res["metrics"]
    assert m["all/acc_official"] == pytest.approx(fmean([it["acc_official"] for it in items]))
    assert m["video/acc"] == pytest.approx(fmean([it["acc"] for it in items if it["subset"] == "video"]))


def test_svo_probes_pairs_per_negated_part(svo_probes_dir, tmp_path, run_global):
    b = benchmarks.load(f"svo-probes:{svo_probes_dir}")
    assert b.info["excluded_multi"] == 1 and b.info["dropped_missing_image"] == {"verb": 1}
    res, items = run_global(f"svo-probes:{svo_probes_dir}")
    assert {it["subset"]: it["id"] for it in items} == {"subj": "svo-0", "verb": "svo-1", "obj": "svo-2"}
    for it in items:
        assert it["pair"] == float(it["scores"][0][0] > it["scores"][1][0])
    assert next(it for it in items if it["subset"] == "obj")["pair"] == 0.0  # its two images are one picture
    m = res["metrics"]
    assert m["macro/pair"] == pytest.approx(fmean([it["pair"] for it in items]))
    assert not any(k.endswith("_official") for k in m)
    assert any("0/1 match decisions" in n for n in res["benchmark"]["notes"])


def test_naturalbench_is_winoground_on_every_pair(naturalbench_dir, tmp_path, run_global):
    res, items = run_global(f"naturalbench:{naturalbench_dir}")
    assert len(items) == 3
    for it in items:
        assert {k: it[k] for k in ("text", "image", "group")} == _wino(it["scores"])
    assert items[2]["image"] == 0.0 and items[2]["text"] == 0.0  # two identical images
    for key in ("text", "image", "group"):
        assert res["metrics"][f"all/{key}"] == pytest.approx(fmean([it[key] for it in items]))
    bad = json.loads((naturalbench_dir / "metadata.json").read_text())
    bad[1]["index"] = 7
    root = naturalbench_dir.parent / "bad"
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "metadata.json").write_text(json.dumps(bad))
    with pytest.raises(UnbagError, match="metadata.json: item 1: field 'index' is 7"):
        benchmarks.load(f"naturalbench:{root}")


def test_cola_multiobj_and_single_object_map(cola_dir, tmp_path, run_global):
    skm = pytest.importorskip("sklearn.metrics")
    with pytest.warns(UserWarning, match="PACO"):
        b = benchmarks.load(f"cola:{cola_dir}")
    assert b.info["missing_subsets"] == ["single-paco"] and b.info["skipped_no_positive"] == {"single-gqa": 1}
    with pytest.warns(UserWarning):
        res, items = run_global(f"cola:{cola_dir}")
    multi = [it for it in items if it["subset"] == "multiobj"]
    assert len(multi) == 2
    for it in multi:
        assert it["image"] == _wino(it["scores"])["image"]
    m = res["metrics"]
    assert m["multiobj/image"] == pytest.approx(fmean([it["image"] for it in multi]))
    single = {it["id"]: it for it in items if it["subset"].startswith("single")}
    assert set(single) == {"single-gqa-0", "single-gqa-1", "single-clevr-0", "single-clevr-1", "single-clevr-2"}
    labels = {it.id: it.meta["labels"] for it in b.items if it.id in single}
    for i, it in single.items():
        s, y = [row[0] for row in it["scores"]], labels[i]
        assert it["mAP_official"] == pytest.approx(skm.average_precision_score(y, s), abs=1e-5)
        order = sorted(range(len(s)), key=lambda k: (-s[k], y[k]))  # tied negatives first
        hits = [k for k in order if y[k]]
        assert it["mAP"] == pytest.approx(fmean([(n + 1) / (order.index(k) + 1) for n, k in enumerate(hits)]), abs=1e-5)
    clevr0 = single["single-clevr-0"]  # positives 4 and 5 tie with the negative 3
    assert clevr0["mAP"] < clevr0["mAP_official"]
    for sub in ("single-gqa", "single-clevr"):
        assert m[f"{sub}/mAP"] == pytest.approx(fmean([it["mAP"] for i, it in single.items() if i.startswith(sub)]))
    assert m["macro/mAP_official"] == pytest.approx(fmean([m["single-gqa/mAP_official"], m["single-clevr/mAP_official"]]))
    assert "multiobj/mAP" not in m and "single-gqa/image" not in m


@pytest.mark.parametrize("name", ["crepe", "eqben", "imagecode", "svo-probes", "naturalbench", "cola"])
def test_a_missing_release_names_what_it_looked_for(name, tmp_path):
    with pytest.raises(UnbagError, match=str(tmp_path)):
        benchmarks.load(f"{name}:{tmp_path}")


@pytest.mark.parametrize("name, fixture, top", [
    ("whatsup", "whatsup_dir", "data"), ("colorswap", "colorswap_dir", "data"), ("mmvp-vlm", "mmvp_vlm_dir", "MMVP_VLM"),
    ("naturalbench", "naturalbench_dir", "NaturalBench-Retrieval"), ("cola", "cola_dir", "data"),
    ("crepe", "crepe_dir", "data"), ("imagecode", "imagecode_dir", "data")])
def test_a_release_unpacked_with_its_top_folder_reads_the_same(name, fixture, top, request, tmp_path):
    import shutil
    import warnings

    src = request.getfixturevalue(fixture)
    shutil.copytree(src, tmp_path / "dl" / top)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixtures' planted missing files
        a, b = benchmarks.load(f"{name}:{src}"), benchmarks.load(f"{name}:{tmp_path / 'dl'}")
    assert [it.id for it in a.items] == [it.id for it in b.items] and b.spec == f"{name}:{tmp_path / 'dl'}"
    assert [it.captions for it in a.items] == [it.captions for it in b.items]


def test_a_duplicated_record_is_refused_naming_both_places(svo_probes_dir, colorswap_dir, tmp_path):
    import shutil

    svo = tmp_path / "svo"
    shutil.copytree(svo_probes_dir, svo)
    lines = (svo / "svo_probes.csv").read_text().splitlines(keepends=True)
    (svo / "svo_probes.csv").write_text("".join(lines + [lines[1]]))  # row 0 again, as line 7
    with pytest.raises(UnbagError, match=r"svo_probes\.csv:7: duplicate id 'svo-0' \(also at .*svo_probes\.csv:2\)"):
        benchmarks.load(f"svo-probes:{svo}")
    cs = tmp_path / "cs"
    shutil.copytree(colorswap_dir, cs)
    recs = json.loads((cs / "test.json").read_text())
    (cs / "test.json").write_text(json.dumps(recs + [recs[0]]))
    with pytest.raises(UnbagError, match="duplicate id"):
        benchmarks.load(f"colorswap:{cs}")
