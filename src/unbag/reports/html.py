"""`unbag report RESULTS... --out DIR`: a static HTML page and a Markdown file of the results.

Tables (every number links to the results file that holds it, with the key in its tooltip),
bar charts per category and an ID-vs-OOD plot (matplotlib), and SGI explanation images for a few
out-of-distribution ctrl items. The folder is self-contained: results files are copied into
DIR/data/; it is written in a temporary folder and renamed into place.
"""
from __future__ import annotations

import html
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..benchmarks import Grid
from ..errors import UnbagError, warn
from ..utils import atomic_dir, check_out, read_json
from .table import entry_half, half, labelled, mean_half, spread_text

RESULT_FIELDS = ("model", "protocol", "benchmark", "metrics")  # what every results file holds


@dataclass
class Result:
    file: Path  # the results file as given
    data_name: str  # its copy under DIR/data/
    res: dict
    model: str  # the row's model and protocol: a plan's names (its cell), else the specs
    protocol: str

    @property
    def retrieval(self) -> bool:
        return any("/retrieval/" in k for k in self.res["metrics"])


def check_result(f: Path, res: object) -> dict:
    """The content `res` of the results file `f`, checked: a JSON object with the fields every
    results file has, and metrics that are fractions (finite, in [0, 1]); errors name the file and
    the field or key."""
    if not isinstance(res, dict):
        raise UnbagError(f"{f}: not a results file of `unbag eval` or `unbag run` (a JSON object with "
                         f"{', '.join(RESULT_FIELDS)})")
    for k in RESULT_FIELDS:
        if k not in res:
            raise UnbagError(f"{f}: missing field '{k}'; not a results file of `unbag eval` or `unbag run`")
    if not isinstance(res["metrics"], dict) or not isinstance(res["benchmark"], dict) \
            or not isinstance(res["benchmark"].get("name"), str):
        raise UnbagError(f"{f}: field 'metrics' must be an object of metric values and 'benchmark' an object "
                         "with a 'name'")
    for k, v in res["metrics"].items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
            raise UnbagError(f"{f}: metrics['{k}'] is {v!r}; a metric is a fraction in [0, 1] (the file is "
                             "damaged or was not written by unbag)")
    for k in ("model", "protocol"):
        if not isinstance(res[k], str):
            raise UnbagError(f"{f}: field '{k}' must be a string, got {res[k]!r}")
    return res


def paper_rows(paths: list[str | os.PathLike], results: list[Result]) -> tuple[str, list[str], list[list]] | None:
    """The numbers a run's plan quotes from a paper ([published]: `unbag run paper` fills it for a
    model the paper measured) beside the run's own: per quoted cell, the paper's value, ours with
    its interval, ours - paper in points and whether the paper's lies inside our interval. None
    when no run quotes any."""
    from .published import reproduced

    rows, sources = [], []
    for p in map(Path, paths):
        summary = p / "summary.json"
        pub = read_json(summary).get("published") if p.is_dir() and summary.is_file() else None
        if not isinstance(pub, dict):
            continue
        sources.append(pub["source"])
        mine = {(r.model, r.protocol, (r.res.get("cell") or {}).get("benchmark")): r for r in results}
        for bench, table in pub.items():
            if bench == "source":
                continue
            key = table["metric"]
            for cell, value in table.items():
                if cell == "metric":
                    continue
                model, _, protocol = cell.partition(" ")
                r = mine.get((model, protocol, bench))
                ours = None if r is None or key not in r.res["metrics"] else r.res["metrics"][key]
                rows.append([model, labelled(protocol, r.res if r else None), (bench, None, None),
                             (key, None, None), (value, None, key),
                             None if ours is None else (ours, r, key, half(r.res, key)),
                             None if ours is None else (reproduced(ours, r.res.get("intervals", {}).get(key), value), None, None)])
    if not rows:
        return None
    head = ["model", "protocol", "benchmark", "metric", "paper", "ours", "ours - paper (points; inside our 95% interval?)"]
    return "; ".join(dict.fromkeys(sources)), head, rows


def _run_cells(run: Path) -> tuple[list[tuple[Path, dict]], list[str]]:
    """The results files of a plan's folder that are cells of its current plan (summary.json), each
    with its cell, and notes on what was left out: cells of another plan, cells not yet run, and
    files that lead out of the folder."""
    summary = read_json(run / "summary.json")
    cells = summary.get("cells") if isinstance(summary, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) and isinstance(c.get("file"), str) for c in cells):
        raise UnbagError(f"{run / 'summary.json'}: field 'cells' must list the plan's cells (rerun `unbag run`)")
    root, found, notes, missing = run.resolve(), [], [], 0
    listed = set()
    for c in cells:
        f = run / c["file"]
        listed.add(f.name)
        if not f.resolve().is_relative_to(root) or f.is_symlink():
            raise UnbagError(f"{run / 'summary.json'}: cell file {c['file']!r} leads out of {run}; a report "
                             "takes only the files unbag wrote in the run folder")
        if f.is_file():
            found.append((f, c))
        else:
            missing += 1
    others = sorted(p.name for p in (run / "results").glob("*.json") if p.name not in listed)
    if missing:
        notes.append(f"{run}: {missing} cell(s) of its plan have no results yet (an unfinished run)")
    if others:
        notes.append(f"{run}: {len(others)} results file(s) are not cells of its current plan ({others[0]}"
                     f"{', ...' if len(others) > 1 else ''}), left out; they came from another plan run into "
                     "this folder")
    return found, notes


def collect(paths: list[str | os.PathLike], notes: list[str] | None = None) -> list[Result]:
    """Results files (or folders: a plan's folder gives the cells of its current plan, another
    folder its results/*.json or *.json), in a stable order; `notes` gets what was left out."""
    notes = [] if notes is None else notes
    given: list[tuple[Path, dict | None, bool]] = []  # file, its cell, named by the user
    for p in map(Path, paths):
        if p.is_dir() and (p / "summary.json").is_file():
            found, said = _run_cells(p)
            given += [(f, c, False) for f, c in found]
            notes += said
        elif p.is_dir():
            found = sorted((p / "results").glob("*.json")) or sorted(p.glob("*.json"))
            given += [(f, None, False) for f in found if f.name != "summary.json"]
        elif p.is_file():
            given.append((p, None, True))
        elif p.exists():
            raise UnbagError(f"{p}: not a regular file or a folder (a FIFO, socket or device); unbag reads results "
                             "files and run folders only")
        else:
            raise UnbagError(f"{p}: no such results file or folder")
    out, names = [], set()
    for f, cell, named in given:
        if not named and f.is_symlink():
            raise UnbagError(f"{f}: a link in a results folder; a report takes only the files unbag wrote there")
        data = read_json(f)
        if not named and cell is None and isinstance(data, dict) and "metrics" not in data and "model" not in data:
            continue  # another file of a results folder (a negatives file, a head's record...); a damaged one is an error
        res = check_result(f, data)
        cell = cell or (res["cell"] if isinstance(res.get("cell"), dict) else None)
        model, protocol = (str(cell["model"]), str(cell["protocol"])) if cell and {"model", "protocol"} <= set(cell) \
            else (res["model"], res["protocol"])
        name, k = f.name, 1
        while name in names:  # unique copies: the parent folder, then a number
            name = f"{f.parent.name}-{f.name}" if k == 1 else f"{k}-{f.name}"
            k += 1
        names.add(name)
        out.append(Result(f, name, res, model, protocol))
    if not out:
        raise UnbagError(f"no results files among {', '.join(map(str, paths))}")
    return out


def _rows(results: list[Result]) -> dict[tuple[str, str], dict[str, tuple[float, Result]]]:
    """(model, protocol) -> metric key -> (value, the result holding it, the key)."""
    rows: dict[tuple[str, str], dict[str, tuple[float, Result]]] = {}
    for r in results:  # retrieval is scored globally: it joins the model's global row
        key = (r.model, "global" if r.retrieval else r.protocol)
        rows.setdefault(key, {}).update({k: (v, r, k, half(r.res, k)) for k, v in r.res["metrics"].items()})
    return rows


def _pm_html(v: float, h: float | None) -> str:
    return "" if h is None else f'<span class="pm">{spread_text(v, h)}</span>'


def _cell_html(entry: tuple | None) -> str:
    """A number linked to its results file, with the half-width of its 95% interval (entry: value,
    result, metric key[, half-width]; no result: a number computed from several, or a note in words)."""
    if entry is None:
        return "<td></td>"
    v, r, key = entry[:3]
    if isinstance(v, str):
        return f"<td>{html.escape(v)}</td>"
    if r is None:
        return f"<td>{100 * v:.1f}{_pm_html(v, entry_half(entry))}</td>"
    tip = html.escape(f"{r.data_name}: metrics['{key}']")
    return f'<td><a href="data/{html.escape(r.data_name)}" title="{tip}">{100 * v:.1f}</a>{_pm_html(v, entry_half(entry))}</td>'


_MD_MARKS = str.maketrans({c: "\\" + c for c in "\\`*_[]|~"})


def md(text: object) -> str:
    """Text from results (names from downloaded data, model specs, notes) as inert Markdown on one
    line: HTML's < > & as entities (a Markdown viewer passes raw HTML on) and Markdown's own marks
    escaped, so that a subset named `<img onerror=...>` or `[x](javascript:...)` stays text."""
    return html.escape(" ".join(str(text).split()), quote=False).translate(_MD_MARKS)


def _cell_md(entry: tuple | None) -> str:
    if entry is None:
        return ""
    v, r = entry[:2]
    if isinstance(v, str):
        return md(v)
    pm = spread_text(v, entry_half(entry))
    return (f"{100 * v:.1f}" if r is None else f"[{100 * v:.1f}](data/{quote(r.data_name)})") + pm


def _values(mets: dict) -> dict:
    """metric key -> value, from a row's entries (value, result, key)."""
    return {k: e[0] for k, e in mets.items()}


def against(rows, grid: Grid, baseline: str | None) -> dict[tuple[str, str], str]:
    """Per row whose model also has a `baseline` row (a protocol name: global cosine by default),
    its OOD mean minus the baseline's with the 95% paired-bootstrap interval of that difference,
    from the two per-item files (reports/compare.py); "n/a" where they are not on the same items."""
    from .compare import paired_mean_difference

    if not baseline:
        return {}
    keys = [grid.key(grid.splits[-1], c) for c in grid.average]
    out = {}
    for (m, p), mets in rows.items():
        base = rows.get((m, baseline))
        if p == baseline or base is None:
            continue
        mine, theirs = {_file(mets, k) for k in keys}, {_file(base, k) for k in keys}
        if len(mine) != 1 or len(theirs) != 1 or None in mine | theirs:
            continue
        try:
            d, (lo, hi) = paired_mean_difference(mine.pop(), theirs.pop(), keys)
        except UnbagError as e:
            out[(m, p)] = "n/a"
            warn(f"report: {m} · {p} against {m} · {baseline}: {e}")
            continue
        out[(m, p)] = f"{100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"
    return out


def _file(mets: dict, key: str):
    e = mets.get(key)
    return e[1].file if e is not None and getattr(e[1], "file", None) is not None else None


def main_table(rows, grid: Grid, baseline: str | None = None) -> tuple[list[str], list[list]]:
    """Header and cells of a grid's table: per category its ID and OOD score, the OOD mean over the
    grid's `average` categories, then the joined columns (ctrl: retrieval R@1), and, with a
    `baseline` protocol, each row's OOD mean against its model's baseline row (`against`)."""
    head = ["model", "protocol"]
    keys = []
    for c in grid.categories:
        for s in grid.splits:
            head.append(f"{c} {s.upper()}")
            keys.append(grid.key(s, c))
    head += [grid.mean_header, *(h for h, _ in grid.joined)]
    vs = against(rows, grid, baseline)
    if vs:
        head.append(f"{grid.mean_header} − {baseline} [paired 95%]")
    body = []
    for (m, p), mets in rows.items():
        cells = [mets.get(k) for k in keys]
        a = grid.mean(_values(mets), grid.splits[-1])
        h = mean_half([entry_half(mets.get(grid.key(grid.splits[-1], c))) for c in grid.average])
        avg = None if a is None else (a, None, None, h)  # computed here, no file to link
        cells += [avg, *(mets.get(k) for _, k in grid.joined)]
        if vs:
            cells.append((vs[(m, p)], None, None) if (m, p) in vs else None)
        first = next((e[1].res for k, e in mets.items() if k in keys and hasattr(e[1], "res")), None)
        body.append([m, labelled(p, first), *cells])
    return head, body


def figures(rows, out: Path, grid: Grid) -> list[tuple[str, str]]:
    """Bar charts of a grid's score per category (ID and OOD) and an ID-vs-OOD scatter."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{m}\n{p}" for m, p in rows]
    made = []
    first, last = grid.splits[0], grid.splits[-1]
    metric = f"{grid.metric} score"
    for c in grid.categories:
        ids = [100 * mets[grid.key(first, c)][0] if grid.key(first, c) in mets else 0 for mets in rows.values()]
        oods = [100 * mets[grid.key(last, c)][0] if grid.key(last, c) in mets else 0 for mets in rows.values()]
        if not any(ids) and not any(oods):
            continue
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(labels)), 3.6))
        x = range(len(labels))
        # error bars: the 95% intervals as recorded (asymmetric where Wilson's is)
        ax.bar([i - 0.2 for i in x], ids, 0.4, label=first.upper(), color="#4C72B0",
               yerr=_errors(rows, grid.key(first, c)), capsize=2, error_kw={"lw": 0.8})
        ax.bar([i + 0.2 for i in x], oods, 0.4, label=last.upper(), color="#DD8452",
               yerr=_errors(rows, grid.key(last, c)), capsize=2, error_kw={"lw": 0.8})
        ax.axhline(100 * grid.chance, color="gray", ls="--", lw=1, label="chance")
        ax.set_xticks(list(x), labels, fontsize=7, rotation=45, ha="right")
        ax.set_ylabel(f"{metric} %")
        ax.set_ylim(0, 100)
        ax.set_title(f"{c}: {metric}, in- and out-of-distribution")
        ax.legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        name = f"figures/{grid.name}-category-{c}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append((name, f"{c}: {first.upper()} vs {last.upper()} {metric} per model and protocol"))
    # one colour per model, one marker per protocol: two small legends instead of one per series
    from matplotlib.lines import Line2D
    model_names = list(dict.fromkeys(m for m, _ in rows))
    protocol_names = list(dict.fromkeys(p for _, p in rows))
    colours = plt.get_cmap("tab10")
    markers = "os^DvP*Xh<>p"
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    for (m, p), mets in rows.items():
        pts = [(100 * mets[grid.key(first, c)][0], 100 * mets[grid.key(last, c)][0]) for c in grid.average
               if grid.key(first, c) in mets and grid.key(last, c) in mets]
        if pts:
            ax.scatter(*zip(*pts), s=28, color=colours(model_names.index(m) % 10),
                       marker=markers[protocol_names.index(p) % len(markers)], alpha=0.85)
    ax.plot([0, 100], [0, 100], color="gray", lw=1, ls="--")
    ax.set_xlabel(f"{first.upper()} {metric} %")
    ax.set_ylabel(f"{last.upper()} {metric} %")
    ax.set_title(f"{first.upper()} vs {last.upper()} ({', '.join(grid.average)})")
    by_model = [Line2D([], [], ls="", marker="o", color=colours(k % 10), label=m) for k, m in enumerate(model_names)]
    by_protocol = [Line2D([], [], ls="", color="gray", marker=markers[k % len(markers)], label=p)
                   for k, p in enumerate(protocol_names)]
    models_legend = ax.legend(handles=by_model, title="model", fontsize=7, title_fontsize=7, loc="upper left")
    ax.add_artist(models_legend)
    ax.legend(handles=by_protocol, title="protocol", fontsize=7, title_fontsize=7, loc="lower right")
    fig.tight_layout()
    name = f"figures/{grid.name}-id-vs-ood.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    made.append((name, f"{first.upper()} vs {last.upper()} {metric}: points below the diagonal lose out of "
                       "distribution"))
    return made


def _interval(entry: tuple | None) -> list[float] | None:
    if entry is None or entry[1] is None or not hasattr(entry[1], "res"):
        return None
    got = entry[1].res.get("intervals", {}).get(entry[2])
    return None if not got or any(math.isnan(x) for x in got) else got


def _errors(rows, key: str) -> list[list[float]]:
    """Matplotlib's yerr (below, above) in % of each row's value of `key` (0 where it has none)."""
    below, above = [], []
    for mets in rows.values():
        e = mets.get(key)
        iv = _interval(e)
        below.append(0 if iv is None else 100 * max(0.0, e[0] - iv[0]))
        above.append(0 if iv is None else 100 * max(0.0, iv[1] - e[0]))
    return [below, above]


def headline(rows, grid: Grid) -> list[str]:
    """A few sentences on what a grid's matrix shows, computed from its numbers."""
    first, last = grid.splits[0], grid.splits[-1]
    avg = {k: grid.mean(_values(m), last) for k, m in rows.items()}
    avg = {k: v for k, v in avg.items() if v is not None}
    if not avg:
        return []
    models = list(dict.fromkeys(m for m, _ in avg))
    protocols = list(dict.fromkeys(p for _, p in avg))
    over = ", ".join(grid.average[:-1]) + f" and {grid.average[-1]}" if len(grid.average) > 1 else grid.average[0]
    out = []
    ranked = sorted(avg.items(), key=lambda kv: -kv[1])
    (bm, bp), best = ranked[0]
    halves = {k: mean_half([entry_half(rows[k].get(grid.key(last, c))) for c in grid.average]) for k in avg}
    said = (f"Best out-of-distribution binding: {bp} on {bm}, {100 * best:.1f}% {grid.metric} score on average "
            f"over {over}")
    if len(ranked) > 1:
        (rm, rp), second = ranked[1]
        hb, hr = halves[(bm, bp)], halves[(rm, rp)]
        if hb is not None and hr is not None and best - second <= math.sqrt(hb * hb + hr * hr):
            # the difference's interval (independent estimates: half-widths added in quadrature) holds 0
            said += (f"; not separable from the runner-up, {rp} on {rm} at {100 * second:.1f}% (the 95% interval "
                     f"of their difference, {100 * (best - second):.1f} ±{100 * math.sqrt(hb * hb + hr * hr):.1f}, holds 0)")
    out.append(said + ".")
    spans = []
    for p in protocols:
        on = [m for m in models if (m, p) in avg]
        vals = [avg[(m, p)] for m in on]
        span = f"{100 * min(vals):.1f}" if len(vals) == 1 else f"{100 * min(vals):.1f}-{100 * max(vals):.1f}"
        spans.append(f"{p} {span}" + (f" ({', '.join(on)} only)" if len(on) < len(models) else ""))
    out.append(f"{last.upper()} average by protocol across {len(models)} model{'s' if len(models) > 1 else ''}: "
               + "; ".join(spans) + ".")
    if len(models) > 1 and "global" in protocols and (models[0], "global") in avg:
        base = _values(rows[(models[0], "global")])
        bi, bo = grid.mean(base, first), grid.mean(base, last)
        moves = []
        for m in models[1:]:
            mets = _values(rows.get((m, "global"), {}))
            di, do = grid.mean(mets, first), grid.mean(mets, last)
            if None not in (di, do, bi):
                moves.append(f"{m} {100 * (di - bi):+.1f} {first.upper()} / {100 * (do - bo):+.1f} {last.upper()}")
        if moves:
            out.append(f"Under global cosine, against {models[0]} (points, mean over {'/'.join(grid.average)}): "
                       + "; ".join(moves) + ".")
    return out


def explanations(paths: list[str | os.PathLike], out: Path, notes: list[str]) -> list[tuple[str, str]]:
    """The SGI explanation images that run folders hold (RUN/explain/index.json, written by
    `unbag run` and `unbag demo`), copied into the report; nothing is drawn here. Only images
    unbag drew there are taken: a plain file name in RUN/explain/, no link, a PNG that carries
    unbag's mark; anything else the index names is left out with a note."""
    from ..sgi.explain import drawn_by_unbag

    made = []
    for p in map(Path, paths):
        index = p / "explain" / "index.json"
        if not (p.is_dir() and index.is_file()):
            continue
        entries = read_json(index)
        if not isinstance(entries, list):
            raise UnbagError(f"{index}: expected a list of explanation entries")
        for n, e in enumerate(entries):
            name = e.get("file") if isinstance(e, dict) else None
            src = p / "explain" / name if isinstance(name, str) else None
            ok = (src is not None and name == Path(name).name and name not in ("", ".", "..")
                  and not src.is_symlink() and src.is_file())
            if not (ok and drawn_by_unbag(src)):
                notes.append(f"{index}: entry {n} ({name!r}) is not an explanation image unbag drew in "
                             f"{p / 'explain'}; left out")
                continue
            dest = f"explain/{len(made):02d}-{name}"
            shutil.copyfile(src, out / dest)
            made.append((dest, str(e.get("caption", ""))))
    return made


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 3px 7px; text-align: right; }}
th {{ background: #f3f3f3; }} td:first-child, td:nth-child(2) {{ text-align: left; }}
a {{ color: #1a4f9c; text-decoration: none; }} figure {{ display: inline-block; margin: 0.5em; }}
figcaption {{ font-size: 12px; color: #555; max-width: 640px; }} .note {{ color: #555; font-size: 13px; }}
.pm {{ color: #777; font-size: 11px; }}
img {{ max-width: 100%; height: auto; }}
</style></head>
<body data-images-ok="unknown">
<h1>{title}</h1>
{headline}
<p class="note">{note}</p>
{left}
{body}
{explain}
<h2>Results files</h2>
<ul>{files}</ul>
<script>
// mark the page when every image has loaded (the browser test reads this)
window.addEventListener("load", () => {{
  const imgs = Array.from(document.images);
  const ok = imgs.every(i => i.complete && i.naturalWidth > 0);
  document.body.dataset.imagesOk = ok ? "yes" : "no";
  document.body.dataset.images = String(imgs.length);
}});
</script>
</body></html>
"""


def summary_sections(results: list[Result], out: Path) -> list[tuple[str, list[str], list[list], tuple | None]]:
    """Per benchmark with a declared summary: (title, header, rows, (chart file, caption) or None)."""
    from ..benchmarks import summary
    from .table import summary_tables

    made = []
    cells = [(r.model, r.protocol, r.res, r) for r in results]
    for k, (name, title, head, rows) in enumerate(summary_tables(cells)):
        present = {e[2] for row in rows for e in row[2:] if e is not None}
        made.append((title, head, rows, bar_chart(title, rows, summary(name).headline(present), out, k)))
    return made


def bar_chart(title: str, rows: list[list], key: str, out: Path, k: int) -> tuple | None:
    """A bar per row of a summary table's headline metric (`key`), as figures/bench-K.png."""
    entries = [next((e for e in row[2:] if e is not None and e[2] == key), None) for row in rows]
    if not key or all(e is None for e in entries):
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{row[0]}\n{row[1]}" for row in rows]
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(labels)), 3.4))
    errs = [[0, 0] if _interval(e) is None else [100 * max(0.0, e[0] - _interval(e)[0]), 100 * max(0.0, _interval(e)[1] - e[0])]
            for e in entries]
    ax.bar(range(len(labels)), [0 if e is None else 100 * e[0] for e in entries], 0.6, color="#4C72B0",
           yerr=[[b for b, _ in errs], [a for _, a in errs]], capsize=2, error_kw={"lw": 0.8})
    ax.set_xticks(list(range(len(labels))), labels, fontsize=7, rotation=45, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel(f"{key} %")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    name = f"figures/bench-{k}.png"
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name, f"{title}: {key} per model and protocol"


def _table_html(head: list[str], body: list[list]) -> str:
    t = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for row in body:
        cells = [f"<td>{html.escape(row[0])}</td>", f"<td>{html.escape(str(row[1]))}</td>"]
        cells += [_cell_html(e) for e in row[2:]]
        t.append("<tr>" + "".join(cells) + "</tr>")
    t.append("</table>")
    return "\n".join(t)


def _table_md(head: list[str], body: list[list]) -> list[str]:
    out = ["| " + " | ".join(map(md, head)) + " |", "|" + "---|" * len(head)]
    for row in body:
        cells = [md(row[0]), md(row[1])] + [_cell_md(e) for e in row[2:]]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _figure(name: str, caption: str) -> str:
    return (f'<figure><img src="{name}" alt="{html.escape(caption)}"><figcaption>{html.escape(caption)}'
            "</figcaption></figure>")


INTERVALS_NOTE = ("± the half-width of the 95% interval, +a/-b (its two sides) where it is uneven (Wilson for a "
                  "proportion over items, else a seeded bootstrap; an average of categories or benchmarks combines "
                  "theirs in quadrature; docs/results.md).")
REPORT_FILES = ("index.html", "report.md", "data", "figures", "explain")  # what a report folder holds


def grids(results: list[Result]) -> list[tuple[Grid, dict]]:
    """Per grid the results' benchmarks declare (in order of first appearance), its rows (_rows)."""
    from ..benchmarks import summary

    found: dict[str, tuple[Grid, list[Result]]] = {}
    for r in results:
        g = summary(r.res["benchmark"]["name"]).grid
        if g is not None:
            found.setdefault(g.name, (g, []))[1].append(r)
    return [(g, _rows(rs)) for g, rs in found.values()]


def write_report(paths: list[str | os.PathLike], out: str | os.PathLike, title: str = "unbag results",
                 overwrite: bool = False, baseline: str | None = "global") -> Path:
    """Write DIR/index.html, DIR/report.md, DIR/figures/, DIR/explain/ and DIR/data/ from results
    files and run folders (no model is loaded: explanation images come from the run folders): the
    grid tables and charts (ctrl's), then a table and chart per other benchmark, as each declares.
    `baseline`: the protocol each row of a grid is compared with, paired over the same items (None: no
    such column)."""
    from .table import general_ability, placements, suite_table
    from .vl_compo import spread_figure

    check_out(out, "report", overwrite, REPORT_FILES, inputs=paths)  # before reading anything
    left_out: list[str] = []
    results = collect(paths, left_out)
    inputs = [*paths, *(r.file for r in results), *(Path(p) / "explain" for p in paths if Path(p).is_dir())]
    with atomic_dir(out, "report", overwrite, REPORT_FILES, inputs=inputs) as tmp:
        for sub in ("data", "figures", "explain"):
            (tmp / sub).mkdir()
        for r in results:
            shutil.copyfile(r.file, tmp / "data" / r.data_name)
        sections = summary_sections(results, tmp)
        expl = explanations(paths, tmp, left_out)
        for said_out in left_out:
            warn(said_out)
        v = results[0].res.get("versions", {}) if isinstance(results[0].res.get("versions"), dict) else {}
        note = html.escape(f"{len(results)} results files; unbag {v.get('unbag')}, torch {v.get('torch')}, "
                           f"open_clip {v.get('open_clip')}, git {v.get('git_commit')}")

        body_html, md_body, said = [], [], []
        for grid, rows in grids(results):
            head, body = main_table(rows, grid, baseline)
            figs = figures(rows, tmp, grid)
            splits = " / ".join(s.upper() for s in grid.splits)
            body_html += [f"<h2>{html.escape(grid.name)}: {grid.metric} score by category (%, {splits})</h2>",
                          _table_html(head, body),
                          f'<p class="note">{html.escape(grid.note)} {INTERVALS_NOTE} Every number links to its results '
                          "file.</p>",
                          "<h2>Charts</h2>", "".join(_figure(n, c) for n, c in figs)]
            md_body += [f"## {md(grid.name)}", ""] + _table_md(head, body) + ["", md(f"{grid.note} {INTERVALS_NOTE}"), ""] + \
                [f"![{md(c)}]({quote(n)})" for n, c in figs]
            said += headline(rows, grid)
        general = general_ability([(r.model, r.protocol, r.res, r) for r in results])
        if general:  # a fine-tuning method's cost in general ability, next to its binding scores
            ghead, grows = general
            body_html += ["<h2>General ability: zero-shot top-1 (%)</h2>", _table_html(ghead, grows),
                          '<p class="note">Mean over the zero-shot classification datasets each row was run on '
                          "(a blank dataset is left out of that row's mean).</p>"]
            md_body += ["", "## General ability: zero-shot top-1 (%)", ""] + _table_md(ghead, grows)
        suite = suite_table([(r.model, r.protocol, r.res, r) for r in results])
        if suite:  # the compositionality suite first, then each benchmark in its own columns
            shead, srows, snote = suite
            body_html += ["<h2>The compositionality suite (%)</h2>", _table_html(shead, srows),
                          f'<p class="note">{html.escape(snote)} Each benchmark\'s table below has its official '
                          "columns.</p>"]
            md_body += ["", "## The compositionality suite (%)", ""] + _table_md(shead, srows) + ["", md(snote)]
        placed = placements([(r.model, r.protocol, r.res, r) for r in results])
        if placed:  # where each model stands among vl_compo's 202 published checkpoints
            by: dict[str, list[dict]] = {}
            for r in results:
                if r.protocol == "global" or r.res.get("protocol") == "global":
                    by.setdefault(r.model, []).append(r.res)
            spread = spread_figure(by, tmp)
            body_html += ["<h2>Among the field's published checkpoints</h2>"] + \
                [f'<p class="note">{html.escape(x)}</p>' for x in placed] + ([_figure(*spread)] if spread else [])
            md_body += ["", "## Among the field's published checkpoints", ""] + [md(x) + "\n" for x in placed] + \
                ([f"![{md(spread[1])}]({quote(spread[0])})"] if spread else [])
        for stitle, shead, srows, chart in sections:
            body_html += [f"<h2>{html.escape(stitle)}</h2>", _table_html(shead, srows),
                          '<p class="note">%; strict &gt; (ties count as wrong) unless a column says official. '
                          f"{INTERVALS_NOTE} Every number links to its results file.</p>"] + ([_figure(*chart)] if chart else [])
            md_body += ["", f"## {md(stitle)}", ""] + _table_md(shead, srows) + \
                (["", f"![{md(chart[1])}]({quote(chart[0])})"] if chart else [])
        paper = paper_rows(paths, results)
        if paper:  # a paper's own numbers for the same model, labelled, beside the run's
            psource, phead, prows = paper
            body_html += ["<h2>The paper's numbers beside yours (%)</h2>", _table_html(phead, prows),
                          f'<p class="note">paper: {html.escape(psource)}, for the same model; ours: this run. '
                          f"{INTERVALS_NOTE}</p>"]
            md_body += ["", "## The paper's numbers beside yours (%)", ""] + _table_md(phead, prows) + ["", f"paper: {md(psource)}"]
        expl_html = ("<h2>SGI explanations</h2>" + "".join(_figure(n, c) for n, c in expl)) if expl else ""
        files = "".join(f'<li><a href="data/{html.escape(r.data_name)}">{html.escape(r.data_name)}</a> '
                        f"({html.escape(r.res['model'])}, {html.escape(r.res['protocol'])}, "
                        f"{html.escape(str(r.res['benchmark'].get('spec')))})</li>" for r in results)
        head_html = "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in said) + "</ul>" if said else ""
        left = "".join(f'<p class="note">Left out: {html.escape(x)}</p>' for x in left_out)
        (tmp / "index.html").write_text(PAGE.format(title=html.escape(title), headline=head_html, note=note, left=left,
                                                    body="\n".join(body_html), explain=expl_html, files=files))
        text = [f"# {md(title)}", ""] + [f"- {md(x)}" for x in said] + ["", md(html.unescape(note)), ""] + \
            [f"Left out: {md(x)}\n" for x in left_out] + md_body
        text += [""] + [f"![{md(c)}]({quote(n)})" for n, c in expl]
        (tmp / "report.md").write_text("\n".join(text) + "\n")
    return Path(out)
