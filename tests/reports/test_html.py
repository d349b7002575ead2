import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from unbag.errors import UnbagError
from unbag.evaluation import evaluate
from unbag.reports.html import write_report

ARTIFACTS = Path(os.environ.get("UNBAG_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"))


@pytest.fixture(scope="module")
def report(tiny_bench, tmp_path_factory):
    d = tmp_path_factory.mktemp("results")
    (d / "results").mkdir()
    for model, protocol in (("builtin", "global"), ("builtin", "sgi")):
        evaluate(model, f"ctrl:{tiny_bench}", protocol, out=str(d / "results" / f"pre__ctrl__{protocol}.json"),
                 progress=False)
    evaluate("builtin", "ctrl-retrieval:60", out=str(d / "results" / "pre__ret__global.json"), progress=False)
    from unbag.runner import write_explanations
    write_explanations(d, "builtin", "ctrl", ["ood-color-0000"], 0, "sgi", {})
    import unbag.models
    real, unbag.models.load = unbag.models.load, lambda *a, **k: pytest.fail("the report loaded a model")
    try:
        out = write_report([d], tmp_path_factory.mktemp("rep") / "report")
    finally:
        unbag.models.load = real
    return d, out


@pytest.mark.slow
def test_every_number_links_to_the_file_that_holds_it(report):
    d, out = report
    page = (out / "index.html").read_text()
    links = re.findall(r'<a href="data/([^"]+)" title="([^"]+): metrics\[&#x27;([^&]+)&#x27;\]">([\d.]+)</a>', page)
    assert len(links) >= 2 * 10 + 2  # two protocol rows of 10 category cells, plus retrieval
    for name, _, key, shown in links:
        value = json.loads((out / "data" / name).read_text())["metrics"][key]
        assert shown == f"{100 * value:.1f}"
    assert (out / "report.md").read_text().count("](data/") == len(links)
    # each linked number shows the 95% interval its file records: ± its half-width, or its two
    # sides +a/-b where it is uneven (Wilson's near 0 or 100)
    pms = re.findall(r'<a href="data/([^"]+)" title="[^"]+: metrics\[&#x27;([^&]+)&#x27;\]">([\d.]+)</a>'
                     r'<span class="pm"> (±[\d.]+|\+[\d.]+/-[\d.]+)</span>', page)
    assert len(pms) == len(links) and any(p[3].startswith("+") for p in pms) and any(p[3].startswith("±") for p in pms)
    for name, key, value, shown in pms:
        lo, hi = json.loads((out / "data" / name).read_text())["intervals"][key]
        v = json.loads((out / "data" / name).read_text())["metrics"][key]
        even = abs((hi - float(value) / 100) - (float(value) / 100 - lo)) < 0.001
        assert shown == (f"±{100 * (hi - lo) / 2:.1f}" if shown.startswith("±")
                         else f"+{max(0, 100 * (hi - v)):.1f}/-{max(0, 100 * (v - lo)):.1f}")
        assert shown.startswith("±") or not even
    # SGI's row against global cosine on the same items: the paired difference of the OOD average
    from unbag.reports.compare import paired_mean_difference
    keys = [f"ood/{c}/group" for c in ("color", "size", "material")]
    diff, (lo, hi) = paired_mean_difference(d / "results" / "pre__ctrl__sgi.json", d / "results" / "pre__ctrl__global.json",
                                            keys)
    assert "OOD avg c/s/m − global [paired 95%]" in page
    assert f"<td>{100 * diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]</td>" in page
    assert (out / "explain" / "00-ood-color-0000.png").is_file() and (out / "figures" / "ctrl-id-vs-ood.png").is_file()
    with pytest.raises(UnbagError, match="no such results file"):
        write_report([d / "missing.json"], out.parent / "x")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
@pytest.mark.slow
def test_report_in_a_headless_browser(report):
    _, out = report
    url = (out / "index.html").as_uri()
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--virtual-time-budget=5000"]
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    console = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln]
    assert not console, console
    assert 'data-images-ok="yes"' in dom.stdout  # every figure and explanation image loaded
    assert dom.stdout.count("<tr>") >= 3 and "OOD avg c/s/m" in dom.stdout
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    subprocess.run(base + ["--window-size=1400,1800", f"--screenshot={shot}", url], capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_headline_states_the_matrix_from_its_numbers():
    from unbag.benchmarks import CTRL_GRID
    from unbag.reports.html import headline

    def row(i, o):  # the same ID and OOD group score in color, size and material
        return {f"{s}/{c}/group": (v, None, None) for c in ("color", "size", "material")
                for s, v in (("id", i), ("ood", o))}
    rows = {("pre", "global"): row(0.5, 0.4), ("pre", "SGI"): row(0.9, 0.8), ("pre", "SGI-paper"): row(0.3, 0.2),
            ("FT", "global"): row(0.7, 0.45), ("FT", "SGI"): row(0.92, 0.85)}
    said = headline(rows, CTRL_GRID)
    assert said[0].startswith("Best out-of-distribution binding: SGI on FT, 85.0%")
    assert "global 40.0-45.0; SGI 80.0-85.0; SGI-paper 20.0 (pre only)" in said[1] and "2 models" in said[1]
    assert "FT +20.0 ID / +5.0 OOD" in said[2]
    assert headline({("pre", "global"): {}}, CTRL_GRID) == []


@pytest.mark.parametrize("h, separable", [(0.05, True), (0.1, False)])
def test_headline_says_when_the_best_is_not_separable_from_the_runner_up(h, separable):
    from unbag.benchmarks import CTRL_GRID
    from unbag.reports.html import headline

    def row(o):  # OOD group score o in color, size and material, each +-h
        return {f"ood/{c}/group": (o, None, None, h) for c in ("color", "size", "material")}
    # the averages' half-widths: sqrt(3 h^2) / 3; their difference's: sqrt(2) times that,
    # 0.041 for h = 0.05 (0.85 - 0.80 = 0.05 is more) and 0.082 for h = 0.1 (it is not)
    said = headline({("pre", "SGI"): row(0.80), ("FT", "SGI"): row(0.85), ("FT", "global"): row(0.3)}, CTRL_GRID)[0]
    assert said.startswith("Best out-of-distribution binding: SGI on FT, 85.0%")
    assert ("not separable from the runner-up, SGI on pre at 80.0%" in said) is not separable


@pytest.fixture(scope="module")
def every_benchmark(bench_spec, tmp_path_factory):
    """One plan over every registered benchmark (global, and SGI where it applies), run, reported."""
    from unbag.runner import run_plan
    d = tmp_path_factory.mktemp("mixed")
    benches = "\n".join(f'{name.replace("+", "p")} = "{bench_spec(name)}"' for name in sorted(bench_spec.names))
    (d / "plan.toml").write_text(f'out = "{d / "run"}"\nexplain = []\n[models]\npre = "builtin"\n[benchmarks]\n{benches}\n'
                                 '[protocols]\nglobal = "global"\nSGI = { protocol = "sgi", phases = 1 }\n')
    results = run_plan(d / "plan.toml", progress=False)
    return results, write_report([d / "run"], d / "report"), d


@pytest.mark.slow
def test_report_shows_every_benchmark_with_linked_numbers(every_benchmark, capsys):
    from unbag import benchmarks
    from unbag.reports.table import print_matrix
    results, out, _ = every_benchmark
    page, md = (out / "index.html").read_text(), (out / "report.md").read_text()
    links = re.findall(r'<a href="data/([^"]+)" title="([^"]+): metrics\[&#x27;([^&]+)&#x27;\]">([\d.]+)</a>', page)
    for name, _, key, shown in links:
        assert shown == f"{100 * json.loads((out / 'data' / name).read_text())['metrics'][key]:.1f}"
    linked = {(name, key) for name, _, key, _ in links}
    print_matrix(results)
    printed = capsys.readouterr().out
    assert max(map(len, printed.splitlines())) <= 120  # every benchmark's table fits the terminal
    for r in results:  # every declared headline metric of every cell is in the page, linked, and printed
        s = benchmarks.summary(r["benchmark"]["name"])
        cell = Path(r["cell"]["file"]).name
        if s.grid is not None:  # its grid's table: every category score or joined column, linked and printed
            g = s.grid
            assert f"<h2>{g.name}: {g.metric} score by category" in page and f"## {g.name}\n" in md
            assert all(f"{g.name}, {w}" in printed for w in ("in-distribution", "out-of-distribution"))
            keys = [g.key(sp, c) for sp in g.splits for c in g.categories] + [k for _, k in g.joined]
            shown = [k for k in keys if k in r["metrics"]]
            assert shown and all((cell, k) in linked for k in shown), (cell, shown)
            assert all(f"{100 * r['metrics'][k]:.1f}" in printed for k in shown)
            continue
        assert f"<h2>{r['benchmark']['name']} (" in page and f"## {r['benchmark']['name']} (" in md
        assert r["benchmark"]["name"] in printed
        for key in s.keys(set(r["metrics"])):
            assert (cell, key) in linked, (cell, key)
        assert f"{100 * r['metrics'][s.headline(r['metrics'])]:.1f}" in printed
    for key, label in (("type=replace/text", "type=replace/I2T"), ("macro/itt", "macro/ITT"),
                       ("all/acc_official", "all/acc_official"), ("all/zeroshot/top1", "all/zeroshot/top1"),
                       ("all/retrieval/t2i/R@10", "all/retrieval/t2i/R@10")):
        assert f"<th>{label}</th>" in page, label
    charts = sorted(p.name for p in (out / "figures").glob("bench-*.png"))
    assert len(charts) == len({r["benchmark"]["name"] for r in results if benchmarks.summary(r["benchmark"]["name"]).grid is None})


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_of_every_benchmark_in_a_headless_browser(every_benchmark):
    _, out, _ = every_benchmark
    base = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--disable-background-networking", "--virtual-time-budget=5000"]
    dom = subprocess.run(base + ["--dump-dom", (out / "index.html").as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert 'data-images-ok="yes"' in dom.stdout
    for name in ("sugarcrepe", "sugarcrepe++", "aro-vgr", "aro-coco-order", "valse", "winoground", "bivlc",
                 "imagefolder", "karpathy"):
        assert f"<h2>{name} (" in dom.stdout
    assert "OOD avg c/s/m" in dom.stdout  # ctrl's own table is there too


def test_report_md_escapes_html_and_markdown_from_names(tmp_path):
    from unbag.reports.html import write_report

    d = tmp_path / "results"
    d.mkdir()
    res = {"model": "<script>alert(1)</script>", "protocol": "global",
           "benchmark": {"name": "colorswap", "spec": "colorswap:x"},
           "metrics": {"<img src=x onerror=alert(1)>/group": 0.5, "[click](javascript:alert(1))/group": 0.5,
                       "a|b/group": 0.5, "all/group": 0.5}, "n_items": 4}
    (d / "r.json").write_text(json.dumps(res))
    write_report([d], tmp_path / "rep")
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "<script>" not in text and "<img" not in text and not re.search(r"(?<!\\)\]\(javascript:", text)
    assert "&lt;script&gt;" in text and r"a\|b" in text and r"\[click\](javascript:" in text
    html_text = (tmp_path / "rep" / "index.html").read_text()
    assert "<script>alert" not in html_text and "<img src=x" not in html_text
