"""Terminal tables of results (rich)."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table


def results_table(res: dict, metrics: tuple[str, ...] = ("text", "image", "group")) -> Table:
    """Rows = categories (+ all), columns = split x metric, from a results dict's flat metrics."""
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
                row.append("" if v is None else f"{100 * v:.1f}")
        t.add_row(*row, end_section=(c == cats[-2]))
    ties = sum(v for k, v in res["ties"].items() if k.startswith("all/all/"))
    t.caption = (f"{res['n_items']} items; scores in %, strict '>', ties count as wrong "
                 f"({ties} tied comparisons-sets over all metrics); chance: text/image 25, group 16.7")
    return t


def print_results(res: dict) -> None:
    """ctrl results as a category x split table; other benchmarks as a 'subset/metric' listing."""
    if res["benchmark"]["name"] == "ctrl":
        Console().print(results_table(res))
        return
    print(f"{res['benchmark']['spec']} · {res['model']} · protocol {res['protocol']} ({res['n_items']} items)")
    for k, v in res["metrics"].items():
        t = res.get("ties", {}).get(k)
        print(f"  {k:40s} {100 * v:6.2f}" + (f"   ({t} ties)" if t else ""))
