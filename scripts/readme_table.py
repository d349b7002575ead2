"""Print the README's results table from a finished run of the demo's plan (maintainer tooling: the
table is regenerated from a run, never edited by hand).

    .venv/bin/python scripts/readme_table.py RUN_DIR     # RUN_DIR: the plan's `out`, with summary.json

Rows follow the plan's cells; per ctrl cell the group score % of each category (ID / OOD), the
OOD mean over color / size / material, GroupMatch over every category (ID / OOD) and, on the
global rows, the model's ctrl-retrieval recall@1 (image->text / text->image).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

CATEGORIES = ("color", "size", "material", "count", "relation")


def table(run: Path) -> list[str]:
    """The README's table of run folder `run`, as Markdown lines."""
    cells = json.loads((run / "summary.json").read_text())["cells"]
    read = {(c["model"], c["benchmark"], c["protocol"]): json.loads((run / c["file"]).read_text())["metrics"]
            for c in cells if (run / c["file"]).is_file()}
    if len(read) < len(cells):
        sys.exit(f"{run}: {len(cells) - len(read)} of {len(cells)} cells have no results yet (an unfinished run)")
    pct = lambda v: f"{100 * v:.1f}"  # noqa: E731
    lines = ["| model | protocol | " + " | ".join(CATEGORIES) + " | OOD avg c/s/m | GroupMatch | retrieval R@1 (i2t / t2i) |",
             "|---|---|" + "---|" * (len(CATEGORIES) + 3)]
    for (model, bench, protocol), m in read.items():
        if bench != "ctrl":
            continue
        pair = [f"{pct(m[f'id/{c}/group'])} / {pct(m[f'ood/{c}/group'])}" for c in CATEGORIES]
        avg = pct(sum(m[f"ood/{c}/group"] for c in CATEGORIES[:3]) / 3)
        match = f"{pct(m['id/all/groupmatch'])} / {pct(m['ood/all/groupmatch'])}"
        r = read.get((model, "retrieval", "global")) if protocol == "global" else None
        ret = f"{pct(r['all/retrieval/i2t/R@1'])} / {pct(r['all/retrieval/t2i/R@1'])}" if r else ""
        lines.append(f"| {model} | {protocol} | " + " | ".join(pair) + f" | {avg} | {match} | {ret} |")
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("\n".join(table(Path(sys.argv[1]))))
