"""vl_compo's published table: the inferred headline rules over all 202 rows, checkpoint lookup,
published rows beside a user's model in every output, and the rank among the 202."""
import csv
import json
import shutil

import pytest

from unbag.reports import vl_compo
from unbag.reports.published import published


def test_the_inferred_rules_reproduce_every_rows_headlines_and_comp_avg():
    rows = vl_compo.rows()
    assert len(rows) == 202
    for r in rows:
        got = vl_compo.headlines(r.subsets)
        assert set(got) == set(vl_compo.BENCHMARKS), r.name
        for b, v in got.items():
            assert v == pytest.approx(r.headlines[b], abs=1e-6), (r.name, b)
        assert sum(r.headlines.values()) / 12 == pytest.approx(r.comp_avg, abs=1e-6), r.name


def test_the_shipped_files_are_the_published_ones_row_for_row():
    with open(vl_compo.HERE / "results.csv", newline="") as f:
        heads = list(csv.DictReader(f))
    assert [(h["arch"], h["pretrained"]) for h in heads] == [(r.arch, r.pretrained) for r in vl_compo.rows()]
    twice = [r.name for r in vl_compo.rows() if sum(x.name == r.name for x in vl_compo.rows()) > 1]
    assert twice == ["CLIP_ViT-B-16@cc12m", "CLIP_ViT-B-16@cc12m"]  # the one duplicated pair (README)


def test_a_checkpoint_is_known_by_its_open_clip_spec_or_a_folders_note(tmp_path):
    assert vl_compo.checkpoint("open_clip:ViT-B-32-quickgelu@openai").name == "ViT-B-32@openai"
    assert vl_compo.checkpoint("open_clip:ViT-L-14@laion2b_s32b_b82k").family == "OpenCLIP"
    assert vl_compo.checkpoint("open_clip:CLIP_ViT-B-16@cc12m") is None  # two rows: ambiguous
    assert vl_compo.checkpoint("open_clip:ViT-B-32@nosuch") is None and vl_compo.checkpoint("builtin") is None
    (tmp_path / vl_compo.AS_FILE).write_text("open_clip:ViT-B-16@openai\n")
    assert vl_compo.checkpoint(str(tmp_path)).name == "ViT-B-16@openai"


def test_published_numbers_of_a_vl_compo_checkpoint_in_unbags_keys():
    pub = published("open_clip:ViT-L-14@laion2b_s32b_b82k", "valse")
    row = vl_compo.checkpoint("open_clip:ViT-L-14@laion2b_s32b_b82k")
    assert pub.kind == "third-party" and "arXiv 2406.09388" in pub.source and "ViT-L-14@laion2b_s32b_b82k" in pub.source
    assert pub.metrics["foil-it/acc"] == pytest.approx(row.subsets["valse::foil-it"] / 100)
    assert published("open_clip:ViT-L-14@laion2b_s32b_b82k", "vl-checklist-1k").metrics["category=action_r/acc"] == \
        pytest.approx(row.subsets["vl_checklist::Relation_action"] / 100)
    # the official table of OpenAI's ViT-B/32 stays first where it has the benchmark
    assert published("open_clip:ViT-B-32-quickgelu@openai", "sugarcrepe").kind == "official"
    assert published("open_clip:ViT-B-32-quickgelu@openai", "eqben").kind == "third-party"


def _results_of(row, drop=()) -> list[dict]:
    """unbag results files holding what a published row measured (its columns as unbag's keys)."""
    by: dict[str, dict] = {}
    for col, (bench, keys) in vl_compo.COLUMNS.items():
        if col in row.subsets and not any(col.startswith(d + "::") for d in drop):
            for k in keys:
                by.setdefault(bench, {})[k] = row.subsets[col] / 100
    return [{"benchmark": {"name": b}, "metrics": m, "protocol": "global"} for b, m in by.items()]


def test_a_model_measuring_what_a_row_measured_lands_on_its_average_and_rank():
    rows = vl_compo.rows()
    row = rows[40]
    p = vl_compo.place(_results_of(row))
    assert not p.partial and p.average == pytest.approx(row.comp_avg, abs=1e-6)
    means = sorted((r.comp_avg for r in rows), reverse=True)
    assert p.rank == 1 + sum(m > p.average + 1e-9 for m in means) and p.of == 203
    assert len(p.above) == 3 and len(p.below) == 3 and p.above[-1][1] >= p.average >= p.below[0][1] - 1e-6


def test_a_partial_suite_says_so_and_ranks_on_what_it_has():
    row = vl_compo.rows()[10]
    p = vl_compo.place(_results_of(row, drop=("crepe", "eqben", "imagecode")))
    assert p.partial and len(p.benchmarks) == 9 and "crepe" not in p.benchmarks
    text = vl_compo.placement_text("m", p)
    assert "9 of the 12 benchmarks only" in text and "not vl_compo's comp_avg" in text and "rank" in text


def test_a_suite_of_a_model_declared_a_published_checkpoint_shows_its_row_everywhere(
        winoground_dir, whatsup_dir, tmp_path, capsys):
    from unbag import models
    from unbag.cli import main
    from unbag.reports.export import write_tables

    tiny = models.load("open_clip:unbag-tiny@random").save(tmp_path / "tiny")
    (tiny / vl_compo.AS_FILE).write_text("open_clip:ViT-B-16@openai\n")
    root = tmp_path / "root"
    shutil.copytree(winoground_dir, root / "winoground")
    shutil.copytree(whatsup_dir, root / "whatsup")
    out = tmp_path / "run"
    assert main(["suite", "--model", str(tiny), "--root", str(root), "--out", str(out), "--quiet", "--detail"]) == 0
    said = " ".join(capsys.readouterr().out.split())  # --detail: each benchmark's own table, with the published row
    assert "published (third-party: vl_compo" in said and "ours - published" in said
    assert "vl_compo average" in said and "1 of the 12 benchmarks only (winoground;" in said and "rank" in said
    row = vl_compo.checkpoint(str(tiny))
    want = f"{row.subsets['winoground::group']:.1f}"
    html = (out / "report" / "index.html").read_text()
    md = (out / "report" / "report.md").read_text()
    assert want in html and want in md and "Among the field" in html and "vl\\_compo average" in md
    assert 'src="figures/vl-compo.png"' in html and (out / "report" / "figures" / "vl-compo.png").stat().st_size > 5000
    tex = write_tables([out], tmp_path / "t.tex", "latex").read_text()
    assert "published (third-party" in tex and want in tex
    with open(write_tables([out], tmp_path / "t.csv", "csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["benchmark"] == "winoground" and r["metric"] == "all/group"]
    assert float(rows[0]["published"]) == pytest.approx(row.subsets["winoground::group"] / 100)
    assert rows[0]["published_inside_interval"] in ("yes", "no") and rows[0]["minus_published_points"]
    assert json.loads(next((out / "results").glob("*winoground*.json")).read_text())["model"] == str(tiny)


def test_the_spread_places_a_model_with_an_imagenet_result_as_a_point(tmp_path):
    from PIL import Image

    row = vl_compo.rows()[3]
    results = _results_of(row) + [{"benchmark": {"name": "imagefolder", "dataset": "imagenet1k"},
                                    "metrics": {"all/zeroshot/top1": 0.61}, "protocol": "global"}]
    assert vl_compo.imagenet_of(results) == pytest.approx(61.0)
    (tmp_path / "figures").mkdir()
    name, caption = vl_compo.spread_figure({"mine": results, "other": _results_of(vl_compo.rows()[7])}, tmp_path)
    assert Image.open(tmp_path / name).size[0] > 400 and "on the 12 benchmarks" in caption and "third-party" in caption
    assert vl_compo.spread_figure({"none": []}, tmp_path) is None
