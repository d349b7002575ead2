"""Terminal tables of results (rich), each number with the half-width of its 95% interval."""
from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from ..benchmarks import BENCHMARKS, Grid, suite_folders, summary


class Spread(float):
    """A half-width that keeps its interval [lo, hi]: it computes as the half-width (averages combine
    them in quadrature), and it is shown as the interval itself where that is uneven (Wilson's near
    0 or 100), never as a "±" that reads past 0-100."""
    lo: float
    hi: float

    def __new__(cls, lo: float, hi: float) -> "Spread":
        got = super().__new__(cls, (hi - lo) / 2)
        got.lo, got.hi = lo, hi
        return got


def half(res: dict, key: str) -> float | None:
    """The half-width of a metric's recorded 95% interval, as a `Spread` (None: the file has none)."""
    got = res.get("intervals", {}).get(key)
    if not got or any(x is None or math.isnan(x) for x in got):
        return None
    return Spread(got[0], got[1])


def uneven(v: float, h: float | None) -> tuple[float, float] | None:
    """The interval of `v` where it is uneven enough to show otherwise than "±h" at one decimal of
    a percent; None where "±h" says it."""
    if not isinstance(h, Spread):
        return None
    return (h.lo, h.hi) if abs((h.hi - v) - (v - h.lo)) >= 0.001 else None


def spread_text(v: float, h: float | None, pm: str = "±") -> str:
    """What follows a value in %: " ±4.1", or " [0.0, 3.7]" for an uneven interval, or nothing."""
    if h is None:
        return ""
    iv = uneven(v, h)
    return f" [{100 * iv[0]:.1f}, {100 * iv[1]:.1f}]" if iv else f" {pm}{100 * h:.1f}"


def mean_half(halves: list[float | None]) -> float | None:
    """The half-width of the mean of K independent estimates: sqrt(sum h_k^2) / K (None when one
    has none). Used for an average of categories or benchmarks, whose items are disjoint."""
    if not halves or any(h is None for h in halves):
        return None
    return math.sqrt(sum(h * h for h in halves)) / len(halves)


RECIPES = {"paper": "paper", "unbag": "unbag's"}  # how a row says whose recipe its protocol is


def labelled(protocol: str, recipe: str | None) -> str:
    """A row's protocol with whose recipe it is, as its results file records it: "SGI [unbag's]"."""
    return f"{protocol} [{RECIPES[recipe]}]" if recipe in RECIPES else protocol


def pct(v: float, h: float | None = None) -> str:
    """A value in % with its half-width: "57.0 ±4.1", or its interval where uneven: "0.0 [0.0, 3.7]"
    (no interval: "57.0")."""
    return f"{100 * v:.1f}" + spread_text(v, h)


def results_table(res: dict, metrics: tuple[str, ...] = ("text", "image", "group")) -> Table:
    """Rows = categories (+ all), columns = split x metric, from the flat metrics of a results dict
    of a split x category benchmark."""
    keys = [k.split("/") for k in res["metrics"]]
    splits = sorted({s for s, _, _ in keys if s != "all"}) or ["all"]
    cats = sorted({c for _, c, _ in keys if c != "all"}) + ["all"]
    t = Table(title=f"{res['benchmark']['spec']} · {res['model']} · protocol {res['protocol']}")
    t.add_column("category")
    for s in splits:
        for m in metrics:
            t.add_column(f"{s.upper()} {m}", justify="right")
    for c in cats:
        row = [c]
        for s in splits:
            for m in metrics:
                v = res["metrics"].get(f"{s}/{c}/{m}")
                row.append("" if v is None else pct(v, half(res, f"{s}/{c}/{m}")))
        t.add_row(*row, end_section=(c == cats[-2]))
    ties = sum(v for k, v in res["ties"].items() if k.startswith("all/all/"))
    t.caption = (f"{res['n_items']} items; scores in % ± the half-width of their 95% interval ([lo, hi] where "
                 "uneven), strict '>', ties count as wrong "
                 f"({ties} tied comparisons-sets over all metrics); chance: text/image 25, group 16.7")
    return t


def print_results(res: dict) -> None:
    """Results of a benchmark with a grid (ctrl) as a category x split table; others as a
    'subset/metric' listing."""
    grid = summary(res["benchmark"]["name"]).grid
    if grid is not None and grid.holds(res["metrics"]):
        Console(width=max(150, Console().width)).print(results_table(res))
        return
    print(f"{res['benchmark']['spec']} · {res['model']} · protocol {res['protocol']} ({res['n_items']} items)")
    for k, v in res["metrics"].items():
        t = res.get("ties", {}).get(k)
        lo, hi = res.get("intervals", {}).get(k, (None, None))
        span = f"  [{100 * lo:5.1f}, {100 * hi:5.1f}]" if lo is not None and not math.isnan(lo) else ""
        print(f"  {k:40s} {100 * v:6.2f}{span}" + (f"   ({t} ties)" if t else ""))


def summary_tables(cells: list[tuple[str, str, dict, object]]) -> list[tuple[str, str, list[str], list[list]]]:
    """One table per benchmark whose results are not shown in a grid (benchmarks.Summary), in order
    of first appearance: (benchmark name, title, header, rows). `cells` are (model, protocol,
    results dict, ref); a row is model, protocol, then per column (value, ref, metric key, half-width
    of its interval) or None. Below a global-cosine row of a model with published numbers on the
    benchmark (reports/published.py): a "published" row and one with the difference, saying
    whether the published number is inside the row's 95% interval."""
    from .published import published, reproduced

    groups: dict[str, list] = {}
    for m, p, res, ref in cells:
        name = res["benchmark"]["name"]
        if summary(name).grid is None:
            groups.setdefault(name, []).append((m, p, res, ref))
    out = []
    for name, group in groups.items():
        s = summary(name)
        keys = s.keys({k for _, _, res, _ in group for k in res["metrics"]})
        specs = sorted({res["benchmark"].get("spec", name) for _, _, res, _ in group})
        rows = []
        for m, p, res, ref in group:
            rows.append([m, labelled(p, res.get("recipe")),
                         *[(res["metrics"][k], ref, k, half(res, k)) if k in res["metrics"] else None for k in keys]])
            pub = published(res["model"], name) if res["protocol"] == "global" else None
            if pub is not None and any(k in pub.metrics for k in keys):
                rows.append([m, f"published ({pub.kind}: {pub.source})",
                             *[(pub.metrics[k], None, k) if k in pub.metrics else None for k in keys]])
                rows.append([m, "ours - published (points; inside our 95% interval?)",
                             *[(reproduced(res["metrics"][k], res.get("intervals", {}).get(k), pub.metrics[k]), None, None)
                               if k in pub.metrics and k in res["metrics"] else None for k in keys]])
        out.append((name, f"{name} ({', '.join(specs)})", ["model", "protocol", *map(s.label, keys)], rows))
    return out


def print_summaries(cells: list[tuple[str, str, dict, object]]) -> None:
    """The summary tables on the terminal (%, as in the report); a table wider than the terminal
    (CREPE's 232 subsets) is turned on its side: a row per metric, a column per model and protocol."""
    console = Console(width=max(150, Console().width))
    general = general_ability(cells)
    tables = summary_tables(cells) + ([("", "general ability (zero-shot top-1)", *general)] if general else [])
    for _, title, head, rows in tables:
        cells_ = [[row[0], row[1], *["" if e is None else e[0] if isinstance(e[0], str) else pct(e[0], entry_half(e))
                                     for e in row[2:]]] for row in rows]
        t = Table(title=f"{title}: % ± half-width of the 95% interval ([lo, hi] where uneven), strict '>' (ties count as wrong)")
        if _width(head, cells_) <= console.width:
            for h in head:
                t.add_column(h, justify="left" if h in ("model", "protocol") else "right")
            for row in cells_:
                t.add_row(*row)
        else:
            t.add_column("metric")
            for row in cells_:
                t.add_column(f"{row[0]} · {row[1]}", justify="right")
            for k, h in enumerate(head[2:], 2):
                t.add_row(h, *[row[k] for row in cells_])
        console.print(t)


def _width(head: list[str], rows: list[list[str]]) -> int:
    """The characters a table of these cells needs (rich's borders and padding: 3 a column)."""
    return 1 + sum(3 + max([len(h)] + [len(r[k]) for r in rows]) for k, h in enumerate(head))


def entry_half(entry: tuple | None) -> float | None:
    """The half-width of the 95% interval a table entry (value, ref, key[, half]) carries."""
    return entry[3] if entry is not None and len(entry) > 3 else None


def general_ability(cells: list[tuple[str, str, dict, object]]) -> tuple[list[str], list[list]] | None:
    """The general-ability table: per model (and protocol), each dataset's declared general metric
    (zero-shot top-1) and their mean over the datasets it was run on (a blank dataset is left out
    of that mean); None without such results."""
    per: dict[tuple[str, str], dict[str, tuple]] = {}
    specs: list[str] = []
    for m, p, res, ref in cells:
        p = labelled(p, res.get("recipe"))
        key = summary(res["benchmark"]["name"]).general
        if key and key in res["metrics"]:
            spec = res["benchmark"].get("spec", res["benchmark"]["name"])
            specs += [spec] if spec not in specs else []
            per.setdefault((m, p), {})[spec] = (res["metrics"][key], ref, key, half(res, key))
    if not per:
        return None
    rows = []
    for (m, p), got in per.items():
        mean = sum(v[0] for v in got.values()) / len(got)
        rows.append([m, p, *[got.get(s) for s in specs], (mean, None, None, mean_half([v[3] for v in got.values()]))])
    return ["model", "protocol", *specs, "mean zero-shot top-1"], rows


def suite_table(cells: list[tuple[str, str, dict, object]], absent: tuple[tuple[str, str, str], ...] = ()
                ) -> tuple[list[str], list[list], str] | None:
    """The suite table: a row per suite benchmark (a folder: ARO's four parts are one) with results
    among `cells`, a column per model x protocol holding its score (the mean of its parts' declared
    suite scores, `Summary.suite_score`), then the suite average, the mean of those scores over the
    benchmarks a column has (FSC-CLIP's); then the readings shown beside it and never averaged
    (`Kind.suite_extra`: VL-CheckList's every item); and a note naming what the average covers and
    any score that averaged only part of its declared keys. `absent`: (benchmark, protocol, why)
    of cells a protocol could not score. None without suite results."""
    folders = suite_folders()
    cols: list[tuple[str, str]] = []
    recipes: dict[tuple[str, str], str | None] = {}
    got: dict[str, dict[tuple[str, str], list]] = {}
    used: dict[str, dict[str, list[str]]] = {}  # row -> benchmark -> the keys its score averaged
    short: dict[str, set[str]] = {}  # row -> declared keys missing from some column's results
    for m, p, res, ref in cells:
        name = res["benchmark"]["name"]
        k = BENCHMARKS.get(name)
        folder = getattr(k, "suite", None)
        s = summary(name)
        score = s.suite_score(res["metrics"]) if folder else None
        if score is not None:
            row = f"{folder} ({name}, beside)" if k.suite_extra else folder
            keys = s.suite_keys(res["metrics"])
            cols += [(m, p)] if (m, p) not in cols else []
            recipes[(m, p)] = res.get("recipe")
            h = mean_half([half(res, k) for k in keys])
            got.setdefault(row, {}).setdefault((m, p), []).append((score, ref, keys[0] if len(keys) == 1 else None, h))
            used.setdefault(row, {}).setdefault(name, keys)
            short.setdefault(row, set()).update(k for k in s.suite if k not in res["metrics"])
    if not got:
        return None
    sums: dict = {c: [] for c in cols}
    beside = [r for r in got if r not in folders]

    def make(row_name: str) -> list:
        row: list = [row_name, _averaged(used[row_name], short[row_name])]
        for c in cols:
            xs = got[row_name].get(c)
            if xs is None:
                parts = folders.get(row_name, [])
                gone = next((w for b, p, w in absent if b in parts and p == c[1]), None)
                row.append(("n/a: " + gone, None, None) if gone else None)
                continue
            v = sum(x[0] for x in xs) / len(xs)
            h = mean_half([x[3] for x in xs])
            if row_name not in beside:
                sums[c].append((v, h))
            one = len(xs) == 1 and xs[0][2] is not None  # one metric of one file: linked to it
            row.append((v, xs[0][1], xs[0][2], h) if one else (v, None, None, h))
        return row

    rows = [make(f) for f in folders if f in got]
    rows += [_average_row(cols, sums)] + [make(r) for r in beside]
    covered = [r[0] for r in rows if r[0] in folders]
    note = (f"Suite average: the mean of the per-benchmark scores of {len(covered)} of the suite's {len(folders)} "
            f"benchmarks ({', '.join(covered)}).")
    if len(covered) < len(folders):
        note += (" A partial suite: its average is not comparable to a full suite's; missing: "
                 + ", ".join(f for f in folders if f not in got) + ".")
    partial = [r for r in covered if short[r]]
    if partial:
        note += (" Averaged over part of their declared keys (files missing): "
                 + "; ".join(f"{r} lacks {', '.join(sorted(short[r]))}" for r in partial) + ".")
    if beside:
        note += " Rows marked 'beside' are another reading of a release (" + ", ".join(beside) + "): shown, never averaged."
    return ["benchmark", "score", *[f"{m} · {labelled(p, recipes[(m, p)])}" for m, p in cols]], rows, note


def _average_row(cols: list, sums: dict) -> list:
    return ["suite average", "mean of the benchmarks above", *[
        (sum(v for v, _ in sums[c]) / len(sums[c]), None, None, mean_half([h for _, h in sums[c]])) if sums[c] else None
        for c in cols]]


def _averaged(used: dict[str, list[str]], missing: set[str]) -> str:
    """What a suite row's score averaged, in words: its parts' keys (each part's own when there
    are several), and the declared keys that were missing, marked partial."""
    keys = [k for ks in used.values() for k in ks]
    if len(used) > 1:
        what = "mean of " + ", ".join(used)
    else:
        what = "mean of " + ", ".join(keys) if len(keys) > 1 else keys[0]
    return what + (f" (partial: {', '.join(sorted(missing))} missing)" if missing else "")


def placements(cells: list[tuple[str, str, dict, object]]) -> list[str]:
    """For each model scored with the global protocol on some of vl_compo's 12 benchmarks: its
    vl_compo average and rank among the 202 published checkpoints (reports/vl_compo.py)."""
    from .vl_compo import place, placement_text

    by: dict[str, list[dict]] = {}
    for m, p, res, _ in cells:
        if res.get("protocol") == "global":
            by.setdefault(m, []).append(res)
    out = []
    for m, results in by.items():
        got = place(results)
        if got is not None:
            out.append(placement_text(m, got))
    return out


def print_suite(cells: list[tuple[str, str, dict, object]], absent: tuple = ()) -> None:
    """The suite table on the terminal (%)."""
    made = suite_table(cells, absent)
    if made is None:
        return
    head, rows, note = made
    t = Table(title="the compositionality suite: each benchmark's score (%), official columns where they differ")
    for h in head:
        t.add_column(h, justify="left" if h in ("benchmark", "score") else "right")
    for n, row in enumerate(rows):
        t.add_row(row[0], row[1], *["" if e is None else e[0] if isinstance(e[0], str) else pct(e[0], entry_half(e))
                                    for e in row[2:]], end_section=n + 1 < len(rows) and rows[n + 1][0] == "suite average")
    t.caption = note
    Console(width=max(150, Console().width)).print(t)
    for line in placements(cells):
        print(line)


def print_grids(cells: list[tuple[str, str, dict, object]]) -> None:
    """Per grid the cells' benchmarks declare (ctrl's), its matrix on the terminal: rows = model x
    protocol; a column per category (ID / OOD), the OOD mean, then the joined columns ("a / b")."""
    grids: dict[str, tuple[Grid, dict]] = {}
    for m, p, res, _ in cells:
        g = summary(res["benchmark"]["name"]).grid
        if g is not None:
            row = grids.setdefault(g.name, (g, {}))[1].setdefault((m, labelled(p, res.get("recipe"))), ({}, {}))
            row[0].update(res["metrics"])
            row[1].update({k: half(res, k) for k in res["metrics"]})
    for grid, rows in grids.values():
        t = Table(title=grid.title + " (± half-width of the 95% interval, [lo, hi] where uneven)")
        for h in ["model", "protocol", *grid.categories, grid.mean_header] + ([grid.joined_title] if grid.joined else []):
            t.add_column(h, justify="left" if h in ("model", "protocol") else "right")
        for (m, p), (mets, halves) in rows.items():
            cells_ = [_joined([(mets.get(k), halves.get(k)) for k in (grid.key(s, c) for s in grid.splits)])
                      for c in grid.categories]
            mean = grid.mean(mets, grid.splits[-1])
            h = mean_half([halves.get(grid.key(grid.splits[-1], c)) for c in grid.average])
            cells_.append("" if mean is None else pct(mean, h))
            if grid.joined:
                cells_.append(_joined([(mets.get(k), halves.get(k)) for _, k in grid.joined]))
            t.add_row(m, p, *cells_)
        Console(width=max(170, Console().width)).print(t)


def _joined(values: list[tuple[float | None, float | None]]) -> str:
    """(value, half-width) pairs in % as "a ±h / b ±h", blank when the first is missing."""
    return "" if values[0][0] is None else " / ".join("" if v is None else pct(v, h) for v, h in values)
