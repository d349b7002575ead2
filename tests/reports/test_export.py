"""`unbag report --format latex | csv`: compiled by a real TeX engine where one is installed, read back with csv."""
import csv
import json
import re
import shutil
import subprocess

import pytest

from unbag.cli import main
from unbag.errors import UnbagError
from unbag.reports.export import CSV_FIELDS, write_tables

CATS = ("color", "size", "material", "count", "relation")


def _result(d, name, protocol, recipe, base, model="pre"):
    """A ctrl results file: group score base + a small step per category, with Wilson-like intervals."""
    metrics, intervals = {}, {}
    for k, c in enumerate(CATS):
        for s, shift in (("id", 0.1), ("ood", 0.0)):
            v = round(base + shift + 0.01 * k, 4)
            metrics[f"{s}/{c}/group"] = v
            intervals[f"{s}/{c}/group"] = [round(v - 0.05, 4), round(v + 0.04, 4)]
    res = {"model": model, "protocol": protocol, "recipe": recipe, "benchmark": {"name": "ctrl", "spec": "ctrl"},
           "metrics": metrics, "intervals": intervals, "interval_methods": {k: "wilson" for k in metrics},
           "n_items": 100}
    (d / f"{name}.json").write_text(json.dumps(res))
    sc = {"model": model, "protocol": protocol, "recipe": recipe,
          "benchmark": {"name": "sugarcrepe", "spec": "sugarcrepe:x"},
          "metrics": {"add_att/acc": base, "replace_rel/acc": base + 0.2, "all/acc": base + 0.1, "macro/acc": base + 0.1},
          "intervals": {"add_att/acc": [base - 0.1, base + 0.1]}, "n_items": 10}
    (d / f"sc-{name}.json").write_text(json.dumps(sc))


@pytest.fixture
def results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    _result(d, "global", "global", "paper", 0.3)
    _result(d, "sgi", "SGI", "unbag", 0.8)
    _result(d, "paper", "SGI-paper", "paper", 0.5)
    return d


def test_latex_has_a_booktabs_table_per_benchmark_with_the_best_in_bold(results, tmp_path):
    out = write_tables([results], tmp_path / "tables.tex", "latex", intervals=True, baseline=None)
    tex = out.read_text()
    assert tex.count(r"\begin{table}") == 2 and tex.count(r"\toprule") == 2 and r"\bottomrule" in tex
    # SGI is best in every column: its OOD color (0.80) bold, global's (0.30) not
    # intervals [v - 5, v + 4]: uneven, shown as their two sides
    assert r"\textbf{80.0}$^{+4.0}_{-5.0}$" in tex and r"\textbf{30.0}" not in tex
    assert r"SGI [unbag's]" in tex and "SGI-paper [paper]" in tex and "global [paper]" in tex
    plain = write_tables([results], tmp_path / "plain.tex", "latex").read_text()
    assert r"\pm" not in plain.split(r"\begin{table}", 1)[1].split(r"\caption")[0]


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="no TeX engine (Debian's texlive-latex-base and texlive-latex-recommended; .ci/run installs them)")
def test_the_latex_compiles_with_a_real_tex_engine(results, tmp_path):
    write_tables([results], tmp_path / "tables.tex", "latex", intervals=True)
    (tmp_path / "paper.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
                                        "\\input{tables.tex}\n\\end{document}\n")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "paper.pdf").stat().st_size > 1000


def test_csv_is_tidy_and_reads_back(results, tmp_path, capsys):
    main(["report", str(results), "--format", "csv", "--out", str(tmp_path / "cells.csv")])
    assert "csv written to" in capsys.readouterr().out
    with open(tmp_path / "cells.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == CSV_FIELDS
    files = {p.name: json.loads(p.read_text()) for p in results.glob("*.json")}
    assert len(rows) == sum(len(r["metrics"]) for r in files.values())
    for row in rows:
        res = files[row["file"]]
        assert float(row["value"]) == res["metrics"][row["metric"]] and row["protocol"] == res["protocol"]
        lo_hi = res.get("intervals", {}).get(row["metric"])
        assert (row["lo"], row["hi"]) == (("", "") if lo_hi is None else (str(lo_hi[0]), str(lo_hi[1])))
    assert {r["recipe"] for r in rows} == {"paper", "unbag"}


def test_a_file_unbag_did_not_write_is_not_replaced(results, tmp_path):
    (tmp_path / "mine.tex").write_text("\\section{my paper}\n")
    with pytest.raises(UnbagError, match="mine.tex"):
        write_tables([results], tmp_path / "mine.tex", "latex")
    assert (tmp_path / "mine.tex").read_text() == "\\section{my paper}\n"
    write_tables([results], tmp_path / "t.tex", "latex")
    write_tables([results], tmp_path / "t.tex", "latex", intervals=True)  # its own file: replaced


def _sugarcrepe(d, model, value, lo, hi):
    res = {"model": model, "protocol": "global", "recipe": "paper",
           "benchmark": {"name": "sugarcrepe", "spec": "sugarcrepe:x"},
           "metrics": {"macro/acc": value, "all/acc": value, "replace_att/acc": value},
           "intervals": {"macro/acc": [lo, hi], "all/acc": [lo, hi], "replace_att/acc": [lo, hi]}, "n_items": 100}
    f = d / f"{model.replace(':', '_').replace('@', '_').replace('/', '_')}.json"
    f.write_text(json.dumps(res))
    return res


def test_a_published_model_gets_its_published_row_and_whether_it_reproduced(tmp_path):
    from unbag.reports.table import summary_tables

    ours = _sugarcrepe(tmp_path, "open_clip:ViT-B-32-quickgelu@openai", 0.734, 0.72, 0.75)
    other = _sugarcrepe(tmp_path, "builtin", 0.5, 0.4, 0.6)
    (_, _, head, rows), = summary_tables([("CLIP", "global", ours, None), ("mine", "global", other, None)])
    names = [r[1] for r in rows]
    assert names[1].startswith("published (official: SugarCrepe") and len(rows) == 4  # none for builtin
    col = {h: j for j, h in enumerate(head)}
    macro = next(h for h in head if "macro" in h)
    assert rows[1][col[macro]][0] == 0.730
    # 73.4 against 73.0: +0.4, and 0.730 lies in [0.72, 0.75]; replace_att: 73.4 against 80.08, outside
    assert rows[2][col[macro]][0] == "+0.4, inside"
    att = next(h for h in head if "replace_att" in h)
    assert rows[2][col[att]][0] == "-6.7, outside"


def test_the_report_shows_the_published_rows(tmp_path):
    from unbag.reports.html import write_report

    d = tmp_path / "res"
    d.mkdir()
    _sugarcrepe(d, "open_clip:ViT-B-32-quickgelu@openai", 0.734, 0.72, 0.75)
    page = (write_report([d], tmp_path / "rep") / "index.html").read_text()
    assert "published (official: SugarCrepe" in page and "+0.4, inside" in page


HOSTILE = ("=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd")


def test_csv_cells_a_spreadsheet_would_run_are_made_inert(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    metrics = {f"{name}/acc": 0.5 for name in HOSTILE} | {"all/acc": 0.25}
    res = {"model": "=cmd|' /C calc'!A0", "protocol": "global", "benchmark": {"name": "colorswap", "spec": "colorswap:x"},
           "metrics": metrics, "intervals": {"all/acc": [-0.1, 0.6]}, "n_items": 4}
    (d / "r.json").write_text(json.dumps(res))
    out = write_tables([d], tmp_path / "t.csv", "csv")
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    texts = [v for row in rows for k, v in row.items() if k not in ("value", "lo", "hi", "n_items")]
    assert texts and not [v for v in texts if v[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert {row["metric"] for row in rows} == {"'" + k for k in metrics if k != "all/acc"} | {"all/acc"}
    assert rows[0]["model"] == "'=cmd|' /C calc'!A0"
    lo = next(row["lo"] for row in rows if row["metric"] == "all/acc")
    assert float(lo) == -0.1  # a negative number stays a number


@pytest.mark.parametrize("overwrite", [True, False])
def test_the_per_item_file_of_an_input_is_never_an_out(tmp_path, overwrite):
    d = tmp_path
    res = {"model": "m", "protocol": "global", "benchmark": {"name": "sugarcrepe", "spec": "sugarcrepe:x"},
           "metrics": {"all/acc": 0.5}, "n_items": 1, "per_item": "r.items.jsonl"}
    (d / "r.json").write_text(json.dumps(res))
    (d / "r.items.jsonl").write_text('{"id": "a", "scores": [[0.1, 0.2]], "acc": 0.0, "ties": []}\n')
    with pytest.raises(UnbagError, match="an input of this command"):
        write_tables([d / "r.json"], d / "r.items.jsonl", "csv", overwrite=overwrite)
    assert (d / "r.items.jsonl").read_text().startswith('{"id": "a"')


def _one(d, **over):
    res = {"model": "m", "protocol": "global", "benchmark": {"name": "sugarcrepe", "spec": "sugarcrepe:x"},
           "metrics": {"all/acc": 0.5}, "n_items": 1} | over
    (d / "r.json").write_text(json.dumps(res))
    return d / "r.json"


def test_latex_commands_in_names_are_escaped(tmp_path):
    f = _one(tmp_path, model="\\input{/etc/passwd} $x$ & % # _ ^ ~")
    tex = write_tables([f], tmp_path / "t.tex", "latex").read_text()
    assert "\\input{/etc" not in tex and "\\textbackslash{}input" in tex


@pytest.mark.parametrize("value, said", [("0.5", "metrics['all/acc'] is '0.5'"), (float("nan"), "is nan")])
def test_a_damaged_metric_is_refused_by_name(tmp_path, value, said):
    f = _one(tmp_path, metrics={"all/acc": value})
    with pytest.raises(UnbagError, match=re.escape(said)):
        write_tables([f], tmp_path / "t.csv", "csv")


def test_exports_never_replace_a_foreign_file_or_write_into_an_input(tmp_path):
    f = _one(tmp_path)
    (tmp_path / "theirs.csv").write_text("a,b\n1,2\n")
    with pytest.raises(UnbagError, match="exists and unbag did not write it"):
        write_tables([f], tmp_path / "theirs.csv", "csv")
    run = tmp_path / "run"
    (run / "results").mkdir(parents=True)
    with pytest.raises(UnbagError, match="an input of this command"):
        write_tables([run], run / "results" / "x.csv", "csv")
    assert (tmp_path / "theirs.csv").read_text() == "a,b\n1,2\n"


def test_a_results_path_that_is_a_fifo_is_named_for_what_it_is(tmp_path):
    import os
    os.mkfifo(tmp_path / "r.json")
    with pytest.raises(UnbagError, match="not a regular file or a folder"):
        write_tables([tmp_path / "r.json"], tmp_path / "t.csv", "csv")


def test_uneven_intervals_are_shown_as_they_are_in_every_output():
    from unbag.reports.html import _cell_md, _pm_html
    from unbag.reports.table import half, mean_half, pct

    res = {"intervals": {"hi": [0.982, 1.0], "lo": [0.0, 0.018], "mid": [0.45, 0.55]}}
    assert pct(1.0, half(res, "hi")) == "100.0 +0.0/-1.8"  # never "100.0 ±0.9", which reads past 100
    assert pct(0.0, half(res, "lo")) == "0.0 +1.8/-0.0" and pct(0.5, half(res, "mid")) == "50.0 ±5.0"
    assert _pm_html(1.0, half(res, "hi")) == '<span class="pm"> +0.0/-1.8</span>'
    assert _cell_md((0.0, None, "lo", half(res, "lo"))) == "0.0 +1.8/-0.0"
    assert mean_half([half(res, "hi"), half(res, "lo")]) == pytest.approx((0.009 ** 2 * 2) ** 0.5 / 2)  # still a half-width


def test_the_new_methods_published_numbers_read_back_as_written():
    from unbag.reports.published import published
    ce = published("open_clip:CE-CLIP@coco-ft", "aro-vgr")
    assert ce.kind == "official" and ce.metrics == {"macro/acc": 0.830} and "2306.08832" in ce.source
    sc = published("open_clip:TripletCLIP@finetuned", "sugarcrepe").metrics
    subsets = [k for k in sc if k != "macro/acc"]
    assert len(subsets) == 7 and abs(sum(sc[k] for k in subsets) / 7 - sc["macro/acc"]) < 5e-4  # the table's own mean
    assert published("open_clip:FSC-CLIP-LoRA@coco-ft", "winoground").metrics == {"all/group": 0.065}
    assert published("open_clip:FSC-CLIP@coco-ft", "sugarcrepe").metrics == {"macro/acc": 0.851}
