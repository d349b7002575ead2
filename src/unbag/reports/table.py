"""Terminal tables of results (rich), each number with the half-width of its 95% interval."""
from __future__ import annotations

import math
import textwrap

from rich import box
from rich.console import Console
from rich.table import Table

from ..benchmarks import BENCHMARKS, Grid, suite_folders, summary


class Spread(float):
    """A half-width that keeps its interval [lo, hi]: it computes as the half-width (averages combine
    them in quadrature), and it is shown as its two sides "+a/-b" where the interval is uneven
    (Wilson's near 0 or 100), never as a "±" that reads past 0-100."""
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


def sides(v: float, iv: tuple[float, float]) -> tuple[float, float]:
    """How far an interval reaches above and below `v`, in points (never negative)."""
    return max(0.0, 100 * (iv[1] - v)), max(0.0, 100 * (v - iv[0]))


def spread_text(v: float, h: float | None, pm: str = "±") -> str:
    """What follows a value in %: " ±4.1", or " +3.7/-0.0" for an uneven interval (its sides), or nothing."""
    if h is None:
        return ""
    iv = uneven(v, h)
    return " +{:.1f}/-{:.1f}".format(*sides(v, iv)) if iv else f" {pm}{100 * h:.1f}"


def mean_half(halves: list[float | None]) -> float | None:
    """The half-width of the mean of K independent estimates: sqrt(sum h_k^2) / K (None when one
    has none). Used for an average of categories or benchmarks, whose items are disjoint."""
    if not halves or any(h is None for h in halves):
        return None
    if len(halves) == 1:
        return halves[0]  # one estimate: its own interval, uneven or not
    return math.sqrt(sum(h * h for h in halves)) / len(halves)


RECIPES = {"paper": "paper", "unbag": "unbag's"}  # how a row says whose recipe its protocol is


def labelled(protocol: str, res: dict | None) -> str:
    """A row's protocol with whose recipe it is, as its results file `res` records it ("SGI [unbag's]"),
    and "transductive" for a protocol that adapted the model on the items it scored (ttm)."""
    res = res or {}
    tags = [RECIPES[res["recipe"]]] if res.get("recipe") in RECIPES else []
    tags += ["transductive"] if res.get("transductive") else []
    return f"{protocol} [{', '.join(tags)}]" if tags else protocol


def pct(v: float, h: float | None = None) -> str:
    """A value in % with its half-width: "57.0 ±4.1", or its sides where uneven: "0.0 +3.7/-0.0"
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
    t.caption = (f"{res['n_items']} items; scores in % ± the half-width of their 95% interval (+a/-b where "
                 "uneven), strict '>', ties count as wrong "
                 f"({ties} tied comparisons-sets over all metrics); chance: text/image 25, group 16.7")
    return t


def print_results(res: dict) -> None:
    """Results of a benchmark with a grid (ctrl) as a category x split table; others as a
    'subset/metric' listing."""
    grid = summary(res["benchmark"]["name"]).grid
    if grid is not None and grid.holds(res["metrics"]):
        console().print(results_table(res))
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
            rows.append([m, labelled(p, res),
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
    """The summary tables on the terminal (%, as in the report), each in WIDTH columns: as it is
    where it fits, else on its side (a row per metric, a column per model and protocol: CREPE's 232
    subsets) where that fits, else in blocks of its columns, each block repeating the row names."""
    general = general_ability(cells)
    tables = summary_tables(cells) + ([("", "general ability (zero-shot top-1)", *general)] if general else [])
    for name, title, head, rows in tables:
        cells_ = [[row[0], row[1], *map(entry_text, row[2:])] for row in rows]
        # the title is the benchmark's name; where it was read from (paths are long) goes under the table
        print_blocks(f"{name or title}: %", head, cells_, 2, caption=NOTE + (f". {title}" if name else ""))


NOTE = "± the half-width of the 95% interval, +a/-b where uneven; strict '>', ties count as wrong"


def print_blocks(title: str, head: list[str], rows: list[list[str]], fixed: int, caption: str = NOTE) -> None:
    """A table of text cells in WIDTH columns: whole where it fits; on its side (the value columns
    as rows) where that fits; else in blocks of value columns that fit, the first `fixed` columns
    (the row names) repeated in each."""
    out = console()
    if _width(head, rows) > out.width:
        side_head = [" · ".join(head[:fixed]) or "metric", *[" · ".join(r[:fixed]) for r in rows]]
        side = [[h, *[r[k] for r in rows]] for k, h in enumerate(head[fixed:], fixed)]
        if _width(side_head, side) <= out.width:
            head, rows, fixed = side_head, side, 1
    chunks: list[list[int]] = [[]]
    for k in range(fixed, len(head)):
        if chunks[-1] and _width([head[j] for j in [*range(fixed), *chunks[-1], k]],
                                 [[r[j] for j in [*range(fixed), *chunks[-1], k]] for r in rows]) > out.width:
            chunks.append([])
        chunks[-1].append(k)
    for n, chunk in enumerate(chunks, 1):
        part = f" (columns {n} of {len(chunks)})" if len(chunks) > 1 else ""
        t = compact(title + part)
        for j in [*range(fixed), *chunk]:
            t.add_column(head[j], justify="left" if j < fixed else "right")
        for r in rows:
            t.add_row(*[r[j] for j in [*range(fixed), *chunk]])
        out.print(t)
    if caption:  # under the table, in WIDTH columns (a caption would wrap to a narrow table's width)
        print(textwrap.fill(caption, WIDTH, break_long_words=False, break_on_hyphens=False))


def _width(head: list[str], rows: list[list[str]]) -> int:
    """The characters a `compact` table of these cells needs (2 between columns; a header's longest line)."""
    return sum(max([len(line) for line in h.split("\n")] + [len(r[k]) for r in rows]) for k, h in enumerate(head)) \
        + 2 * (len(head) - 1)


def entry_text(entry: tuple | None) -> str:
    """A table entry (value, ref, key[, half]) as the terminal shows it: its text, or its value in %
    with its interval; blank for none."""
    return "" if entry is None else entry[0] if isinstance(entry[0], str) else pct(entry[0], entry_half(entry))


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
        p = labelled(p, res)
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


def suite_row(name: str) -> str | None:
    """The suite table's row a benchmark's results join: its folder, or "FOLDER (NAME, beside)" for
    a reading shown beside the suite (`Kind.suite_extra`); None outside the suite."""
    k = BENCHMARKS.get(name)
    folder = getattr(k, "suite", None)
    return f"{folder} ({name}, beside)" if folder and k.suite_extra else folder


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
    recipes: dict[tuple[str, str], dict] = {}  # a column's results, for its label
    got: dict[str, dict[tuple[str, str], list]] = {}
    used: dict[str, dict[str, list[str]]] = {}  # row -> benchmark -> the keys its score averaged
    short: dict[str, set[str]] = {}  # row -> declared keys missing from some column's results
    for m, p, res, ref in cells:
        name = res["benchmark"]["name"]
        row = suite_row(name)
        s = summary(name)
        score = s.suite_score(res["metrics"]) if row else None
        if score is not None:
            keys = s.suite_keys(res["metrics"])
            cols += [(m, p)] if (m, p) not in cols else []
            recipes[(m, p)] = res
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
    """The suite's one table on the terminal (%): a row per benchmark with its score, what the score
    is, its items and a column per model and protocol, then the suite average; the vl_compo
    placements below. Each benchmark's own columns are in the report (or `unbag suite --detail`)."""
    made = suite_table(cells, absent)
    if made is None:
        return
    head, rows, note = made
    items = suite_items(cells)
    texts = [[row[0], _short(row[1]), items.get(row[0], ""),
              *map(entry_text, row[2:])]
             for row in rows]
    models = {c[0] for c in cells}
    title = "the compositionality suite: each benchmark's score %"
    cols = [h.split(" · ", 1) for h in head[2:]]
    if len(models) == 1:  # the model in the title, the protocols as headers
        n = f" ({len(cols)} protocols)" if len(cols) > 1 else ""
        title, cols = f"{title}{n}, {next(iter(models))}", [[p] for _, p in cols]
    print_blocks(title, [head[0], head[1], "items", *["\n".join(fold(" · ".join(c))) for c in cols]],
                 texts, 3, caption=NOTE + ". " + note)
    for line in placements(cells):
        print(textwrap.fill(line, WIDTH, subsequent_indent="  "))


def fold(text: str, most: int = 24) -> list[str]:
    """A header in lines of at most `most` characters, broken at spaces, else after : @ / -."""
    lines = textwrap.wrap(text, most, break_long_words=False, break_on_hyphens=True)
    out = []
    for line in lines:
        while len(line) > most:
            cut = max((line.rfind(ch, 0, most) for ch in ":@/-"), default=-1)
            cut = cut + 1 if cut > 0 else most
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return out


def suite_items(cells: list[tuple[str, str, dict, object]]) -> dict[str, str]:
    """Per suite row (a folder), the items its parts scored, as text ("2,000"; several counts where
    columns scored different numbers)."""
    per: dict[str, dict[tuple[str, str], int]] = {}
    for m, p, res, _ in cells:
        row = suite_row(res["benchmark"]["name"])
        if row and res.get("n_items") is not None:
            col = per.setdefault(row, {})
            col[(m, p)] = col.get((m, p), 0) + res["n_items"]
    return {row: " / ".join(f"{n:,}" for n in sorted(set(got.values()))) for row, got in per.items()}


def _short(what: str, most: int = 36) -> str:
    """What a suite score averages, for the terminal: as `_averaged` says it where that is short,
    else how many things it averages ("mean of 4"; the report names them)."""
    if len(what) <= most:
        return what
    head, partial = what.split(" (partial", 1) if " (partial" in what else (what, "")
    n = len(head.removeprefix("mean of ").split(", "))
    return f"mean of {n}" + (" (partial)" if partial else "")


WIDTH = 120  # the terminal tables are laid out to fit this many columns (wider terminals: as wide)


def console() -> Console:
    """The terminal's console, at least WIDTH columns wide (rich assumes 80 when output is piped)."""
    return Console(width=max(WIDTH, Console().width))


def compact(title: str) -> Table:
    """A table with two spaces between columns and no outer frame: the most numbers in WIDTH columns."""
    return Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))


def print_grids(cells: list[tuple[str, str, dict, object]]) -> None:
    """Per grid the cells' benchmarks declare (ctrl's), its matrix on the terminal in WIDTH columns:
    a table per split (rows = model x protocol, a column per category, the last split's mean),
    then the joined columns of the rows that have them (ctrl-retrieval's recall). A protocol that is
    unbag's own recipe is marked "*" (named in the caption)."""
    grids: dict[str, tuple[Grid, dict]] = {}
    own = False
    for m, p, res, _ in cells:
        g = summary(res["benchmark"]["name"]).grid
        if g is not None:
            mine = res.get("recipe") == "unbag"
            own |= mine
            label = p + ("*" if mine else "") + (" (transductive)" if res.get("transductive") else "")
            row = grids.setdefault(g.name, (g, {}))[1].setdefault((m, label), ({}, {}))
            row[0].update(res["metrics"])
            row[1].update({k: half(res, k) for k in res["metrics"]})
    mark = "; * unbag's own recipe (unmarked: the paper's)" if own else ""
    out = console()
    for grid, rows in grids.values():
        for split in grid.splits:
            t = compact(f"{grid.name}, {SPLIT_NAMES.get(split, split)}: {grid.metric} score %")
            last = split == grid.splits[-1]
            mean_header = "avg " + "/".join(c[0] for c in grid.average)  # the title names the split
            for h in ["model", "protocol", *grid.categories] + ([mean_header] if last else []):
                t.add_column(h, justify="left" if h in ("model", "protocol") else "right")
            for (m, p), (mets, halves) in rows.items():
                if not any(grid.key(split, c) in mets for c in grid.categories):
                    continue
                cells_ = [_value(mets, halves, grid.key(split, c)) for c in grid.categories]
                if last:
                    mean = grid.mean(mets, split)
                    h = mean_half([halves.get(grid.key(split, c)) for c in grid.average])
                    cells_.append("" if mean is None else pct(mean, h))
                t.add_row(m, p, *cells_)
            if t.row_count:
                t.caption = f"{NOTE}; chance {100 * grid.chance:.1f}{mark}"
                out.print(t)
        if grid.joined:
            t = compact(f"{grid.name}: {grid.joined_title} %")
            for h in ["model", "protocol", *[h for h, _ in grid.joined]]:
                t.add_column(h, justify="left" if h in ("model", "protocol") else "right")
            for (m, p), (mets, halves) in rows.items():
                if any(k in mets for _, k in grid.joined):
                    t.add_row(m, p, *[_value(mets, halves, k) for _, k in grid.joined])
            if t.row_count:
                out.print(t)


SPLIT_NAMES = {"id": "in-distribution (ID)", "ood": "out-of-distribution (OOD)"}


def _value(mets: dict, halves: dict, key: str) -> str:
    """A metric in % with its interval, blank when the row lacks it."""
    return "" if mets.get(key) is None else pct(mets[key], halves.get(key))


def print_matrix(results: list[dict]) -> None:
    """Results of a run on the terminal: the matrix of each grid (ctrl's: rows = model x protocol,
    a table per split, then retrieval R@1), then one table per other benchmark, as each declares
    (benchmarks.Summary)."""
    cells = [(r["cell"]["model"], r["cell"]["protocol"], r, None) for r in results]
    print_grids(cells)
    print_summaries(cells)
