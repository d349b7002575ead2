"""What'sUp, VL-CheckList, SPEC, ColorSwap, VisMin and MMVP-VLM in their official layouts: every
metric recomputed by hand from the per-item scores, planted ties scored by both rules."""
from statistics import fmean

import pytest

from unbag import benchmarks


def _argmax(row):
    return max(range(len(row)), key=lambda k: (row[k], -k))  # the first of equal maxima


def test_whatsup_acc_pairs_sets_and_groups(whatsup_dir, tmp_path, run_global):
    with pytest.warns(UserWarning) as got:
        res, items = run_global(f"whatsup:{whatsup_dir}")
    said = " ".join(str(w.message) for w in got)
    assert "coco_qa_two_obj.json" in said and "dropped_missing_image" in said
    assert res["benchmark"]["dropped_missing_image"] == {"vg_qa_two": 1}
    assert set(res["benchmark"]["missing_subsets"]) == {"coco_qa_two", "vg_qa_one"}
    m = res["metrics"]
    right = {it["id"]: float(all(it["scores"][0][0] > x for x in it["scores"][0][1:])) for it in items}
    official = {it["id"]: float(_argmax(it["scores"][0]) == 0) for it in items}
    tied = next(it for it in items if it["id"] == "controlled_a-4")
    assert tied["acc"] == 0.0 and tied["acc_official"] == 1.0 and "acc" in tied["ties"]
    for s in ("controlled_a", "controlled_b", "coco_qa_one", "vg_qa_two"):
        ids = [it["id"] for it in items if it["subset"] == s]
        assert m[f"{s}/acc"] == pytest.approx(fmean([right[i] for i in ids]))
        assert m[f"{s}/acc_official"] == pytest.approx(fmean([official[i] for i in ids]))
    # Controlled A: items 0-3 are mug/table on, under, left_of, right_of; 4-7 beer-bottle/armchair
    for rule, r in (("", right), ("_official", official)):
        a = [r[f"controlled_a-{k}"] for k in range(8)]
        pairs = sum(a[g] and a[g + 1] for g in (0, 2, 4, 6))
        assert m[f"controlled_a/pair_acc{rule}"] == pytest.approx(pairs / 4)
        assert m[f"controlled_a/set_acc{rule}"] == pytest.approx(sum(all(a[g:g + 4]) for g in (0, 4)) / 2)
        b = [r[f"controlled_b-{k}"] for k in range(4)]
        assert m[f"controlled_b/pair_acc{rule}"] == pytest.approx(((b[0] and b[1]) + (b[2] and b[3])) / 2)
        assert m[f"all/pair_acc{rule}"] == pytest.approx((pairs + (b[0] and b[1]) + (b[2] and b[3])) / 6)
        assert m[f"group=whatsup/acc{rule}"] == pytest.approx(
            (m[f"controlled_a/acc{rule}"] + m[f"controlled_b/acc{rule}"]) / 2)
    assert "group=coco_spatial/acc" not in m  # one of its two subsets is absent


def test_vl_checklist_categories_by_source_then_file(vl_checklist_dir, tmp_path, run_global):
    with pytest.warns(UserWarning, match="dropped_missing_image"):
        res, items = run_global(f"vl-checklist:{vl_checklist_dir}")
    m = res["metrics"]
    assert res["benchmark"]["dropped_missing_image"] == {"Relation_spatial_vg": 1}
    acc = {}
    for it in items:
        s = it["scores"][0]
        acc.setdefault(it["subset"], []).append(float(s[0] > s[1]))
    assert set(acc) == {"Attribute_color_vg", "Attribute_color_vaw", "Relation_spatial_vg", "Object_Size_large_swig_agent"}
    assert next(it for it in items if it["id"] == "Attribute_color_vg-1")["ties"] == ["acc"]
    for s, v in acc.items():
        assert m[f"{s}/acc"] == pytest.approx(fmean(v))
    color = (fmean(acc["Attribute_color_vg"]) + fmean(acc["Attribute_color_vaw"])) / 2
    assert m["category=color/acc"] == pytest.approx(color) and m["aspect=Attribute/acc"] == pytest.approx(color)
    assert m["aspect=Relation/acc"] == pytest.approx(fmean(acc["Relation_spatial_vg"]))
    assert m["aspect=Object/acc"] == pytest.approx(fmean(acc["Object_Size_large_swig_agent"]))
    assert m["aspect=mean/acc"] == pytest.approx((color + m["aspect=Relation/acc"] + m["aspect=Object/acc"]) / 3)
    capped = benchmarks.BENCHMARKS["vl-checklist"]  # the official cap, from Python
    from unbag.benchmarks.vl_checklist import load
    assert len(load(vl_checklist_dir, cap=1).items) == 4 and capped.suite == "vl-checklist"


def test_spec_both_directions_with_ties_before_and_after_the_label(spec_dir, tmp_path, run_global):
    res, items = run_global(f"spec:{spec_dir}")
    m = res["metrics"]
    by = {it["id"]: it for it in items}
    # a tie with an earlier key is wrong both ways; with a later one, right for argmax if nothing beats it
    assert by["absolute_size-i2t-1"]["i2t"] == 0.0 and by["absolute_size-i2t-1"]["i2t_official"] == 0.0
    s = by["absolute_size-i2t-2"]["scores"][0]
    assert by["absolute_size-i2t-2"]["i2t"] == 0.0 and "i2t" in by["absolute_size-i2t-2"]["ties"]
    assert by["absolute_size-i2t-2"]["i2t_official"] == float(s[1] > s[0])
    s = [r[0] for r in by["absolute_size-t2i-1"]["scores"]]
    assert by["absolute_size-t2i-1"]["t2i"] == 0.0 and by["absolute_size-t2i-1"]["t2i_official"] == float(s[0] > s[2])
    labels = {"absolute_size-i2t-0": 1, "absolute_size-i2t-1": 1, "absolute_size-i2t-2": 1, "count-i2t-0": 3,
              "absolute_size-t2i-0": 2, "absolute_size-t2i-1": 0}
    for d in ("i2t", "t2i"):
        for s in ("absolute_size", "count"):
            rows = [(it["scores"][0] if d == "i2t" else [r[0] for r in it["scores"]], labels[it["id"]])
                    for it in items if it["subset"] == s and f"-{d}-" in it["id"]]
            if not rows:
                assert f"{s}/{d}" not in m
                continue
            assert m[f"{s}/{d}_official"] == pytest.approx(fmean([float(_argmax(r) == lab) for r, lab in rows]))
            assert m[f"{s}/{d}"] == pytest.approx(fmean([float(all(r[lab] > x for k, x in enumerate(r) if k != lab))
                                                        for r, lab in rows]))
    assert m["macro/i2t_official"] == pytest.approx((m["absolute_size/i2t_official"] + m["count/i2t_official"]) / 2)
    assert "macro/t2i" not in m  # one subset has text-to-image items: no mean over subsets


def _wino(s):
    text = s[0][0] > s[0][1] and s[1][1] > s[1][0]
    image = s[0][0] > s[1][0] and s[1][1] > s[0][1]
    return float(text), float(image), float(text and image)


def test_colorswap_reads_the_zip_in_place(colorswap_dir, tmp_path, run_global):
    res, items = run_global(f"colorswap:{colorswap_dir}")
    assert res["benchmark"]["images"] == "images.zip" and len(items) == 3
    got = [_wino(it["scores"]) for it in items]
    for k, name in enumerate(("text", "image", "group")):
        assert res["metrics"][f"all/{name}"] == pytest.approx(fmean([g[k] for g in got]))
    tied = next(it for it in items if it["id"] == "colorswap-989")
    assert tied["image"] == 0.0 and "image" in tied["ties"]
    assert res["metrics"]["midjourney/group"] == pytest.approx(fmean([g[2] for g, it in zip(got, items)
                                                                     if it["subset"] == "midjourney"]))


def test_vismin_by_the_kits_current_rule_text_k_with_image_k(vismin_dir, tmp_path, run_global):
    res, items = run_global(f"vismin:{vismin_dir}")
    assert [it["id"] for it in items] == ["vismin-v0", "vismin-v1", "vismin-v2"]
    got = {it["id"]: _wino(it["scores"]) for it in items}
    for k, name in enumerate(("text", "image", "group")):
        counting = [got["vismin-v0"][k], got["vismin-v2"][k]]
        assert res["metrics"][f"counting/{name}"] == pytest.approx(fmean(counting))
        assert res["metrics"][f"macro/{name}"] == pytest.approx((fmean(counting) + got["vismin-v1"][k]) / 2)
    assert "image" in items[2]["ties"]


def test_vismin_ignores_a_superseded_solution_file_with_a_warning(vismin_dir, tmp_path):
    import shutil
    kit = tmp_path / "kit"
    shutil.copytree(vismin_dir, kit)
    (kit / "solutions").mkdir()
    # the deleted file's relations, which today's re-ordered rows would mis-score; even a broken copy is ignored
    (kit / "solutions" / "sim_solution.csv").write_text("id,Text,Image,category\n0,T1_I0 > T0_I0,x,counting\n")
    with pytest.warns(UserWarning, match="sim_solution.csv: ignored"):
        b = benchmarks.load(f"vismin:{kit}")
    assert [it.captions for it in b.items] == [it.captions for it in benchmarks.load(f"vismin:{vismin_dir}").items]
    assert any("sim_solution.csv ignored" in n for n in b.info["notes"])


def test_mmvp_official_image_score_is_asymmetric(mmvp_vlm_dir, tmp_path, run_global):
    import torch

    from unbag.benchmarks.mmvp_vlm import metric
    s = torch.tensor([[[0.5, 0.2], [0.1, 0.2]],    # caption 2 ties: right officially, wrong for unbag
                      [[0.3, 0.2], [0.3, 0.4]],    # caption 1 ties: wrong both ways
                      [[0.5, 0.1], [0.1, 0.6]]])   # clear
    m = metric(s, [None] * 3)
    assert m["image_official"].tolist() == [1.0, 0.0, 1.0] and m["image"].tolist() == [0.0, 0.0, 1.0]
    res, items = run_global(f"mmvp-vlm:{mmvp_vlm_dir}")
    b = benchmarks.load(f"mmvp-vlm:{mmvp_vlm_dir}")
    assert b.items[0].captions[0] == "a photo of the dog is facing left"
    assert {it["subset"] for it in items} == {"orientation", "camera_perspective", "color"}
    assert "image" in next(it for it in items if it["subset"] == "color")["ties"]
    per = [float(it["scores"][0][0] > it["scores"][1][0] and it["scores"][1][1] >= it["scores"][0][1]) for it in items]
    assert res["metrics"]["macro/image_official"] == pytest.approx(fmean(per))
