"""Every public benchmark end to end, in its official layout, with metrics recomputed by hand."""
import json
from pathlib import Path

import pytest

from unbag import benchmarks
from unbag.errors import UnbagError
from unbag.evaluation import evaluate

MODEL = "builtin"  # fixed weights: tests recompute with a second load


def _items(res_path):
    return [json.loads(x) for x in res_path.with_suffix(".items.jsonl").read_text().splitlines()]


def _run(spec, tmp_path, model=MODEL, protocol="global"):
    out = tmp_path / "r.json"
    res = evaluate(model, spec, protocol, out=str(out), progress=False)
    return res, _items(out)


def _buckets_are_means(res, items, names):
    """Every `GROUP/METRIC` value of `names` is the mean over its items (a subset, or `KEY=VALUE`
    for another group key, or all of them); the number of keys checked."""
    checked = 0
    for key, value in res["metrics"].items():
        group, _, name = key.rpartition("/")
        if name not in names or group == "macro":
            continue
        field, _, want = group.partition("=") if "=" in group else ("subset", "", group)
        mine = [it[name] for it in items if group == "all" or str(it.get(field)) == want]
        assert mine and value == pytest.approx(sum(mine) / len(mine)), key
        checked += 1
    return checked


def _first_wins(scores):
    row = scores[0]
    return all(row[0] > x for x in row[1:])


def test_sugarcrepe_micro_macro_and_ties(sugarcrepe_dir, tmp_path):
    res, items = _run(f"sugarcrepe:{sugarcrepe_dir}", tmp_path)
    assert len(items) == 15 and res["counts"]["add_att"] == 5
    by = {}
    for it in items:
        by.setdefault(it["subset"], []).append(_first_wins(it["scores"]))
    for s, v in by.items():
        assert res["metrics"][f"{s}/acc"] == pytest.approx(sum(v) / len(v))
    assert res["metrics"]["macro/acc"] == pytest.approx(sum(sum(v) / len(v) for v in by.values()) / 3)
    assert res["metrics"]["all/acc"] == pytest.approx(sum(sum(v) for v in by.values()) / 15)
    assert res["ties"]["all/acc"] >= 3  # the identical-caption items tie, and count as wrong
    tied = [it for it in items if it["id"].endswith("-4")]
    assert all(it["acc"] == 0.0 and it["ties"] == ["acc"] for it in tied)


def test_sugarcrepe_pp_itt_and_tot(sugarcrepe_pp_dir, tmp_path):

    from unbag import models
    from unbag.scoring.encode import encode_texts

    res, items = _run(f"sugarcrepe++:{sugarcrepe_pp_dir}", tmp_path)
    for it in items:
        s = it["scores"][0]
        assert it["itt"] == float(s[0] > s[2] and s[1] > s[2])
    b = benchmarks.load(f"sugarcrepe++:{sugarcrepe_pp_dir}")
    t = encode_texts(models.load(MODEL), [c for it in b.items for c in it.captions]).view(len(b.items), 3, -1)
    want = [float((t[n, 0] @ t[n, 1] > t[n, 0] @ t[n, 2]) and (t[n, 0] @ t[n, 1] > t[n, 1] @ t[n, 2]))
            for n in range(len(b.items))]
    assert res["metrics"]["all/tot"] == pytest.approx(sum(want) / len(want))
    by = {}
    for it in items:
        by.setdefault(it["subset"], []).append(it["itt"])
    for subset, v in by.items():  # each subset's and the macro value, from the per-item rule above
        assert res["metrics"][f"{subset}/itt"] == pytest.approx(sum(v) / len(v))
    assert res["metrics"]["macro/itt"] == pytest.approx(sum(sum(v) / len(v) for v in by.values()) / len(by))
    assert {"replace_att/itt", "swap_obj/tot"} <= set(res["metrics"])
    assert _buckets_are_means(res, items, ("itt", "tot")) >= 4


def test_aro_relation_and_attribution_macro_rules(aro_dir, tmp_path):
    res, items = _run(f"aro-vgr:{aro_dir}", tmp_path)
    acc = {}
    for it in items:
        acc.setdefault(it["subset"], []).append(_first_wins(it["scores"]))
    # "next to" is in the official symmetric list: out of the macro average, still reported
    want = (sum(acc["on"]) / 2 + sum(acc["holding"]) / 3) / 2
    assert res["metrics"]["macro/acc"] == pytest.approx(want)
    assert res["metrics"]["next to/acc"] == pytest.approx(sum(acc["next to"]) / len(acc["next to"]))
    res, items = _run(f"aro-vga:{aro_dir}", tmp_path)
    red = [_first_wins(it["scores"]) for it in items if it["subset"] == "red_wooden"]
    assert res["metrics"]["macro/acc"] == pytest.approx(sum(red) / 25)  # small_white has 2 < 25 items
    b = benchmarks.load(f"aro-vgr:{aro_dir}")
    assert b.items[0].images[0].endswith("#crop=5,4,50,40")


def test_aro_order_perturbations(aro_dir, tmp_path):
    b = benchmarks.load(f"aro-coco-order:{aro_dir}")
    assert len(b.items) == 4  # 2 test images x 2 captions; the train image is left out
    for it in b.items:
        orig = it.captions[0]
        assert orig == orig.lower() and "." not in orig and len(it.captions) == 5
        for p in it.captions[1:]:
            assert sorted(p.split()) == sorted(orig.split())  # a permutation of the words
    res, items = _run(f"aro-coco-order:{aro_dir}", tmp_path)
    same = {it.id: it.meta["same"] for it in b.items}
    strict = [all(i["scores"][0][0] > s or same[i["id"]][j] for j, s in enumerate(i["scores"][0][1:])) for i in items]
    official = [i["scores"][0][0] >= max(i["scores"][0][1:]) for i in items]  # argmax, the original first
    assert res["metrics"]["all/acc"] == pytest.approx(sum(strict) / 4)
    assert res["metrics"]["all/acc_official"] == pytest.approx(sum(official) / 4)


def test_valse_keeps_mturk_valid_items(valse_dir, tmp_path):
    res, items = _run(f"valse:{valse_dir}", tmp_path)
    assert len(items) == 4 and res["benchmark"]["dropped_mturk"] == 2
    assert set(res["counts"]) >= {"existence", "counting-hard"}


def test_winoground_with_tags(winoground_dir, tmp_path):
    res, items = _run(f"winoground:{winoground_dir}", tmp_path)
    for it in items:
        s = it["scores"]
        text = s[0][0] > s[0][1] and s[1][1] > s[1][0]
        image = s[0][0] > s[1][0] and s[1][1] > s[0][1]
        match = s[0][0] + s[1][1] > s[0][1] + s[1][0]
        assert (it["text"], it["image"], it["group"], it["groupmatch"]) == \
            (float(text), float(image), float(text and image), float(match))
    assert {"all/group", "all/groupmatch", "Object/text", "tag=Relation/image", "secondary_tag=Symbolic/group"} \
        <= set(res["metrics"])
    assert _buckets_are_means(res, items, ("text", "image", "group", "pair", "groupmatch")) == \
        len([k for k in res["metrics"] if not k.startswith("macro/")])


def test_bivlc_from_parquet(bivlc_dir, tmp_path):
    res, items = _run(f"bivlc:{bivlc_dir}", tmp_path)
    assert len(items) == 3 and {"replace_att/text", "swap_att/group", "all/image"} <= set(res["metrics"])
    assert _buckets_are_means(res, items, ("text", "image", "group")) >= 9


def test_bivlc_maps_its_rows_to_i2t_t2i_and_group_on_hand_made_scores(bivlc_dir, tmp_path, monkeypatch):
    """Rows (image, caption, negative_image, negative_caption): I2T asks each image to prefer its
    own caption, T2I each caption its own image (BiVLC, arXiv 2406.09952); strict '>'."""
    import torch

    import unbag.scoring.cosine

    b = benchmarks.load(f"bivlc:{bivlc_dir}")
    assert all(it.captions == [f"a {c0} cat", f"a {c1} cat"] for it, (c0, c1) in
               zip(b.items, [("red", "green"), ("green", "blue"), ("blue", "yellow")]))
    # rows: s(image, caption), s(image, negative caption) / s(negative image, caption), s(neg image, neg caption)
    hand = torch.tensor([[[0.9, 0.1], [0.2, 0.8]],    # everything right
                         [[0.6, 0.1], [0.7, 0.8]],    # I2T right; T2I wrong (the negative image wins the caption)
                         [[0.5, 0.5], [0.1, 0.9]]])   # a tie in I2T: wrong, and counted
    monkeypatch.setattr(unbag.scoring.cosine, "score_global", lambda *a, **k: hand)
    res = evaluate(MODEL, f"bivlc:{bivlc_dir}", progress=False)
    m = res["metrics"]
    assert (m["all/text"], m["all/image"], m["all/group"]) == pytest.approx((2 / 3, 2 / 3, 1 / 3))
    assert m["replace_att/group"] == pytest.approx(0.5) and m["swap_att/text"] == 0.0
    assert res["ties"]["all/text"] == 1
    # BiVLC's official table: per type (replace / swap / add), I2T = text, T2I = image, group
    assert (m["type=replace/text"], m["type=replace/image"], m["type=replace/group"]) == pytest.approx((1, 0.5, 0.5))
    assert (m["type=swap/text"], m["type=swap/image"], m["type=swap/group"]) == (0.0, 1.0, 0.0)


def test_zero_shot_classification(imagefolder_dir, tmp_path):
    import torch.nn.functional as F

    from unbag import models
    from unbag.scoring.encode import encode_images, encode_texts

    res = evaluate(MODEL, f"imagefolder:{imagefolder_dir}", out=str(tmp_path / "z.json"), progress=False)
    assert res["benchmark"]["classes"] == 3 and "all/zeroshot/top5" not in res["metrics"]  # top-5 of 3: none
    # top-1 by hand: class vector = mean of its normalised template embeddings; strict '>' wins
    b, backend = benchmarks.load(f"imagefolder:{imagefolder_dir}"), models.load(MODEL)
    img = encode_images(backend, b.images)
    txt = encode_texts(backend, [t.format(c) for c in b.classes for t in b.templates])
    cls = F.normalize(txt.view(len(b.classes), len(b.templates), -1).mean(1), dim=-1)
    sim = img @ cls.T
    wins = [all(sim[i, y] > sim[i, j] for j in range(len(b.classes)) if j != y) for i, y in enumerate(b.labels)]
    assert res["metrics"]["all/zeroshot/top1"] == pytest.approx(sum(wins) / len(wins))


def test_karpathy_retrieval(aro_dir, tmp_path):
    res = evaluate(MODEL, f"karpathy:{aro_dir / 'dataset_coco.json'}", progress=False)
    # two images: each caption's image and each image's captions are always among the top 5
    assert res["n_items"] == 2 and res["metrics"]["all/retrieval/t2i/R@5"] == 1.0
    assert res["metrics"]["all/retrieval/i2t/R@5"] == 1.0


def test_tiny_hf_clip_runs_a_public_benchmark(build_hf, sugarcrepe_dir, tmp_path):
    d = build_hf("clip", tmp_path / "clip")
    res, items = _run(f"sugarcrepe:{sugarcrepe_dir}", tmp_path, model=f"hf:{d}")
    assert res["metrics"]["all/acc"] == pytest.approx(sum(_first_wins(i["scores"]) for i in items) / len(items))


def test_bad_fixture_files_name_the_field(tmp_path, sugarcrepe_dir):
    d = tmp_path / "sc"
    (d / "data").mkdir(parents=True)
    (d / "data" / "swap_obj.json").write_text(json.dumps({"0": {"filename": "x.jpg", "caption": "a"}}))
    with pytest.raises(UnbagError, match=r"swap_obj.json: item '0': missing field 'negative_caption'"):
        benchmarks.load(f"sugarcrepe:{d}")
    (d / "data" / "swap_obj.json").write_text("{oops")
    with pytest.raises(UnbagError, match=r"swap_obj.json:1: not valid JSON"):
        benchmarks.load(f"sugarcrepe:{d}")
    (d / "data" / "swap_obj.json").write_text(json.dumps({"0": {"filename": "gone.jpg", "caption": "a",
                                                                "negative_caption": "b"}}))
    with pytest.raises(UnbagError, match=r"sugarcrepe:.*: no item to score: all 1 item\(s\) .* missing \(the first "
                                         r"expected at .*gone.jpg\); expected sugarcrepe:DIR"), pytest.warns(UserWarning):
        evaluate(MODEL, f"sugarcrepe:{d}", progress=False)
    with pytest.raises(UnbagError, match="reads a local copy of its official release"):
        benchmarks.load("winoground")


# a tiny release for every registered benchmark (tests/benchmarks/releases; one registered without
# one fails below)

def test_every_registered_benchmark_has_a_fixture(bench_spec):
    assert bench_spec.names == set(benchmarks.BENCHMARKS)


@pytest.mark.parametrize("name", list(benchmarks.BENCHMARKS))
@pytest.mark.parametrize("model", ["open_clip", "hf-clip"])
def test_every_benchmark_on_a_tiny_open_clip_and_a_tiny_hf_clip(name, model, bench_spec, build_hf, tmp_path_factory):
    spec = bench_spec(name)
    model = "open_clip:unbag-tiny@random" if model == "open_clip" else \
        f"hf:{build_hf('clip', tmp_path_factory.mktemp('hfclip'))}"
    for protocol in ("global",) if benchmarks.kind(spec).global_only else ("global", "sgi"):
        res = evaluate(model, spec, protocol, progress=False)
        assert res["n_items"] > 0 and res["metrics"] and res["benchmark"]["name"] == name
        assert all(0.0 <= v <= 1.0 for v in res["metrics"].values())
    if benchmarks.kind(spec).global_only:
        with pytest.raises(UnbagError, match="global protocol only"):
            evaluate(model, spec, "sgi", progress=False)


def test_a_shipped_head_scores_a_public_benchmark(winoground_dir, sugarcrepe_dir, tmp_path):
    from unbag.heads.shipped import shipped_head

    protocol = shipped_head("head:builtin:tflocal", "builtin")
    for spec in (f"winoground:{winoground_dir}", f"sugarcrepe:{sugarcrepe_dir}"):
        res, items = _run(spec, tmp_path, protocol=protocol)
        assert res["config"]["options"]["backbone"] == "builtin" and items


@pytest.mark.parametrize("name", [n for n, k in benchmarks.BENCHMARKS.items() if k.suite])
@pytest.mark.slow
def test_a_shipped_head_scores_every_suite_benchmark(name, bench_spec, tmp_path):
    from unbag.heads.shipped import shipped_head

    spec = bench_spec(name)
    res, items = _run(spec, tmp_path, protocol=shipped_head("head:builtin:tflocal", "builtin"))
    assert res["protocol"].startswith("head:") and len(items) == res["n_items"] > 0
    assert res["metrics"] and all(0.0 <= v <= 1.0 for v in res["metrics"].values())


@pytest.mark.parametrize("name, fixture, sub", [("sugarcrepe", "sugarcrepe_dir", "val2017"),
                                                ("sugarcrepe++", "sugarcrepe_pp_dir", "images"),
                                                ("valse", "valse_dir", "images")])
def test_photo_benchmarks_take_an_image_root_apart_from_the_annotations(name, fixture, sub, request, tmp_path):
    import shutil

    from unbag import benchmarks
    from unbag.errors import UnbagError

    src = request.getfixturevalue(fixture)
    ann, imgs = tmp_path / "ann", tmp_path / "coco"
    shutil.copytree(src / "data", ann / "data")
    shutil.copytree(src / sub, imgs)
    b = benchmarks.load(f"{name}:{ann}:{imgs}")
    assert b.items and all(Path(i).is_file() and Path(i).is_relative_to(imgs) for it in b.items for i in it.images)
    assert len(b.items) == len(benchmarks.load(f"{name}:{src}").items)
    with pytest.raises(UnbagError, match="image root not found"):
        benchmarks.load(f"{name}:{ann}:{tmp_path / 'nope'}")


def test_eval_help_lists_every_registered_benchmark(capsys):
    from unbag.benchmarks import BENCHMARKS
    from unbag.cli import main

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at hyphens too
    assert all("".join(k.form.split()) in text for k in BENCHMARKS.values())
