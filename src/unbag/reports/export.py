"""`unbag report RESULTS... --format latex|csv --out FILE`: tables a paper can use.

- LaTeX: booktabs tables, the grid's matrix (ctrl's) and one per other benchmark, as the HTML
  report lays them out; the best value of each column in bold (ties all bold); each row's protocol
  says whose recipe it is ([paper] or [unbag's]), as in the HTML; with `intervals`, each number
  carries ± the half-width of its 95% interval. Needs `\\usepackage{booktabs}`.
- CSV: tidy, one row per (model, benchmark, protocol, metric) of every results file: value, lo, hi
  and how the interval was made, ready for pandas or R.
"""
from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from ..utils import atomic_write, check_file_out
from .html import Result, collect, grids, main_table
from .published import published
from .table import entry_half, sides, summary_tables, uneven

LATEX_MARK = "% written by unbag report --format latex"
CSV_FIELDS = ("model", "protocol", "recipe", "benchmark", "spec", "metric", "value", "lo", "hi", "interval_method",
              "n_items", "file", "published", "published_source", "minus_published_points", "published_inside_interval")


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}", "−": "$-$", "±": r"$\pm$", "·": r"$\cdot$",
        "<": r"\textless{}", ">": r"\textgreater{}"}


def _tex(s: str) -> str:
    """Text made safe for LaTeX (its special characters escaped, a few symbols in math mode)."""
    return "".join(_TEX.get(ch, ch) for ch in s)


def _number(entry) -> float | None:
    return None if entry is None or isinstance(entry[0], str) else entry[0]


def _tex_spread(v: float, h: float) -> str:
    """±h in small type, or the interval's two sides $^{+a}_{-b}$ where it is uneven."""
    iv = uneven(v, h)
    if iv:
        return r"$^{{+{:.1f}}}_{{-{:.1f}}}$".format(*sides(v, iv))
    return rf"{{\scriptsize$\pm${100 * h:.1f}}}"


def latex_table(caption: str, head: list[str], body: list[list], intervals: bool, label: str) -> str:
    """One booktabs table: two text columns (model, protocol), then numbers in %, the best of
    each numeric column in bold."""
    cols = len(head)
    best = {}
    for j in range(2, cols):
        vals = [_number(row[j]) for row in body if j < len(row)]
        vals = [v for v in vals if v is not None]
        if vals:
            best[j] = round(100 * max(vals), 1)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{ll" + "r" * (cols - 2) + "}",
             r"\toprule", " & ".join(_tex(h) for h in head) + r" \\", r"\midrule"]
    for row in body:
        cells = [_tex(str(row[0])), _tex(str(row[1]))]
        for j in range(2, cols):
            e = row[j] if j < len(row) else None
            if e is None:
                cells.append("")
            elif isinstance(e[0], str):
                cells.append(_tex(e[0]))
            else:
                v = f"{100 * e[0]:.1f}"
                v = rf"\textbf{{{v}}}" if best.get(j) == round(100 * e[0], 1) else v
                h = entry_half(e)
                cells.append(v + (_tex_spread(e[0], h) if intervals and h is not None else ""))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_tex(caption)}}}", rf"\label{{{label}}}",
              r"\end{table}"]
    return "\n".join(lines)


def latex(results: list[Result], intervals: bool = False, baseline: str | None = None) -> str:
    """Every table of the report as LaTeX (booktabs)."""
    out = [LATEX_MARK, "% needs \\usepackage{booktabs}; numbers in %; strict '>': ties count as wrong"]
    for grid, rows in grids(results):
        head, body = main_table(rows, grid, baseline)
        splits = " / ".join(s.upper() for s in grid.splits)
        cap = f"{grid.name}: {grid.metric} score by category (%, {splits}). {grid.note}" + (
            " ± the half-width of the 95% interval (+a/-b, its two sides, where it is uneven)." if intervals else "")
        out.append(latex_table(cap, head, body, intervals, f"tab:unbag-{grid.name}"))
    cells = [(r.model, r.protocol, r.res, r) for r in results]
    for k, (name, title, head, rows) in enumerate(summary_tables(cells)):
        cap = f"{title} (%; strict '>', ties count as wrong unless a column says official)" + (
            "; ± the half-width of the 95% interval (+a/-b, its two sides, where it is uneven)" if intervals else "") + "."
        out.append(latex_table(cap, head, rows, intervals, f"tab:unbag-{name}"))
    return "\n\n".join(out) + "\n"


def cell(v):
    """A CSV cell a spreadsheet will not run: text starting with =, +, -, @, a tab or a carriage
    return (a formula, to Excel or LibreOffice) gets a leading ' (OWASP's CSV-injection advice).
    Names come from downloaded data (subset keys, model and file names); numbers stay numbers."""
    return "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


def csv_rows(results: list[Result]) -> list[dict]:
    """One dict per (model, benchmark, protocol, metric) of every result, each text cell inert
    (`cell`); where the model's published numbers hold the metric (a global-cosine result), the
    published value, its source, ours - published in points and whether it lies inside our interval."""
    rows = []
    for r in results:
        res = r.res
        ints, how = res.get("intervals", {}), res.get("interval_methods", {})
        pub = published(res["model"], res["benchmark"].get("name", "")) if res.get("protocol") == "global" else None
        for key, v in res["metrics"].items():
            lo, hi = ints.get(key, (None, None))
            p = pub.metrics.get(key) if pub is not None else None
            inside = "" if p is None or lo is None else ("yes" if lo <= p <= hi else "no")
            rows.append({"model": r.model, "protocol": r.protocol, "recipe": res.get("recipe", ""),
                         "benchmark": res["benchmark"].get("name", ""), "spec": res["benchmark"].get("spec", ""),
                         "metric": key, "value": v, "lo": "" if lo is None else lo, "hi": "" if hi is None else hi,
                         "interval_method": how.get(key, ""), "n_items": res.get("n_items", ""), "file": r.data_name,
                         "published": "" if p is None else p,
                         "published_source": "" if p is None else f"{pub.source} ({pub.kind})",
                         "minus_published_points": "" if p is None else round(100 * (v - p), 4),
                         "published_inside_interval": inside})
    return [{k: cell(v) for k, v in row.items()} for row in rows]


def _written_latex(path: Path) -> bool:
    try:
        return path.read_text().startswith(LATEX_MARK)
    except (OSError, UnicodeDecodeError):
        return False


def _written_csv(path: Path) -> bool:
    try:
        with open(path, newline="") as f:
            return next(csv.reader(f), None) == list(CSV_FIELDS)
    except (OSError, UnicodeDecodeError, csv.Error):
        return False


def write_tables(paths: list[str | os.PathLike], out: str | os.PathLike, fmt: str, intervals: bool = False,
                 overwrite: bool = False, baseline: str | None = "global") -> Path:
    """Write the report's tables as one LaTeX file or one tidy CSV file to `out` (a file unbag did
    not write there is refused unless `overwrite`)."""
    written = _written_latex if fmt == "latex" else _written_csv
    # a results file's per-item file is part of it: never an --out, --overwrite or not
    parts = [Path(p).with_suffix(".items.jsonl") for p in paths if Path(p).suffix == ".json"]
    out = check_file_out(out, f"report --format {fmt}", written, overwrite, (*paths, *parts))
    results = collect(paths, [])
    if fmt == "latex":
        text = latex(results, intervals, baseline)
    else:
        buf = io.StringIO()
        # every text cell quoted: a carriage return in a name cannot break its row
        w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
        w.writeheader()
        w.writerows(csv_rows(results))
        text = buf.getvalue()
    atomic_write(out, text.encode())
    return Path(out)

