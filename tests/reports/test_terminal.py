"""The terminal's tables fit 120 columns: the demo's matrix at its widest, wide benchmark tables in
blocks or on their side, and the suite's one table."""
import itertools

import pytest

from unbag.benchmarks import CTRL_GRID, suite_folders
from unbag.metrics.intervals import wilson
from unbag.reports.table import WIDTH, print_blocks, print_grids, print_suite

PROTOCOLS = [("global", "paper"), ("SGI", "unbag"), ("SGI-paper", "paper"), ("TFLocal", "unbag"),
             ("TFGlobal", "paper"), ("TFRegions", "unbag"), ("TFLocal-LI", "unbag")]


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_the_demo_matrix_at_its_widest_fits_120_columns(capsys):
    # every cell at its widest: uneven Wilson intervals ("100.0 +0.0/-3.7"), the longest names
    counts = itertools.cycle([100, 99, 0, 1, 57, 98])
    cells = []
    for model in ("pretrained", "FT", "NegCLIP", "CLIC", "DeGLA"):
        for p, recipe in PROTOCOLS:
            metrics, intervals = {}, {}
            for split, cat in itertools.product(CTRL_GRID.splits, CTRL_GRID.categories):
                k = next(counts)
                metrics[f"{split}/{cat}/group"], intervals[f"{split}/{cat}/group"] = k / 100, list(wilson(k, 100))
            cells.append((model, p, {"benchmark": {"name": "ctrl"}, "metrics": metrics, "intervals": intervals,
                                     "recipe": recipe, "protocol": p}, None))
        cells.append((model, "global", {"benchmark": {"name": "ctrl-retrieval"}, "recipe": "paper", "protocol": "global",
                                        "metrics": {"all/retrieval/i2t/R@1": 0.753, "all/retrieval/t2i/R@1": 0.787},
                                        "intervals": {}}, None))
    print_grids(cells)
    lines = _lines(capsys)
    assert max(map(len, lines)) <= WIDTH == 120
    text = "\n".join(lines)
    assert "ctrl, in-distribution (ID)" in text and "ctrl, out-of-distribution (OOD)" in text
    assert "100.0 +0.0/-3.7" in text and "0.0 +3.7/-0.0" in text  # uneven: both sides, never "±" past 0-100
    assert "TFLocal-LI*" in text and "* unbag's own recipe" in " ".join(text.split())  # whose recipe each row is
    assert "DeGLA" in text and "75.3" in text  # every row, and the joined retrieval columns
    assert sum(line.startswith("DeGLA") for line in lines) == 2 * 7 + 1  # ID, OOD, retrieval; no row wrapped


@pytest.mark.parametrize("n_cols, n_rows, shape", [(6, 3, "whole"), (232, 2, "side"), (40, 30, "blocks")])
def test_a_table_is_whole_on_its_side_or_in_blocks_and_shows_every_cell(capsys, n_cols, n_rows, shape):
    head = ["model", "protocol", *[f"subset_{k:03d}/acc" for k in range(n_cols)]]
    rows = [[f"model-{r}", "global", *[f"{(r * 7 + k) % 100}.5 ±4.{k % 10}" for k in range(n_cols)]] for r in range(n_rows)]
    print_blocks("t", head, rows, 2)
    lines = _lines(capsys)
    text = "\n".join(lines)
    assert max(map(len, lines)) <= 120
    assert all(h in text for h in head[2:]) and all(c in text for r in rows for c in r)
    assert ("(columns 1 of" in text) == (shape == "blocks")
    assert ("model · protocol" in text) == (shape == "side")


def test_the_suite_table_is_one_table_that_fits(capsys):
    folders = list(suite_folders())
    cells = []
    for p in ("global", "sgi", "head:builtin:tflocal"):
        for f in folders:
            for name in suite_folders()[f]:
                from unbag.benchmarks import summary
                keys = summary(name).suite or (summary(name).chart if isinstance(summary(name).chart, str)
                                               else summary(name).chart[0],)
                cells.append(("open_clip:ViT-B-32-quickgelu@openai", p, {
                    "benchmark": {"name": name, "spec": f"{name}:/data/{f}"}, "metrics": {k: 0.995 for k in keys},
                    "intervals": {k: [0.97, 0.999] for k in keys}, "n_items": 1234, "protocol": p}, None))
    print_suite(cells)
    lines = _lines(capsys)
    text = "\n".join(lines)
    assert max(map(len, lines)) <= 120
    assert "suite average" in text and "1,234" in text and "99.5 +0.4/-2.5" in text
    assert all(any(line.startswith(f) for line in lines) for f in folders)
