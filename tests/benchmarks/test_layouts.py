"""The suite's folders as docs/benchmarks.md draws them ("On disk"): the fixture of every benchmark
is laid out exactly as those lines say, each line is used by it, and a suite root built from them
finds and reads all eighteen."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from unbag import benchmarks, suite_root

DOCS = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def docs_lines() -> dict[str, list[str]]:
    """The 'On disk' block's path patterns, by suite folder."""
    text = DOCS.read_text()
    block = text[text.index('<a id="on-disk"></a>'):]
    block = block[block.index("```text\n") + 8:]
    block = block[:block.index("```")]
    out: dict[str, list[str]] = {}
    for line in block.splitlines():
        pattern = re.split(r" {2,}", line.strip())[0]
        folder, _, rest = pattern.partition("/")
        out.setdefault(folder, []).append(rest)
    return out


def regex(pattern: str) -> re.Pattern:
    """A docs pattern as a regex: <name> one name, ** any path, {a,b} either, [data/] maybe there."""
    out, k = "", 0
    while k < len(pattern):
        c = pattern[k]
        if pattern.startswith("**", k):
            out, k = out + ".+", k + 2
        elif c == "<":
            k = pattern.index(">", k) + 1
            out += "[^/]+"
        elif c == "{":
            end = pattern.index("}", k)
            out += "(?:" + "|".join(map(re.escape, pattern[k + 1:end].split(","))) + ")"
            k = end + 1
        elif c == "[":
            end = pattern.index("]", k)
            out += "(?:" + re.escape(pattern[k + 1:end]) + ")?"
            k = end + 1
        else:
            out, k = out + re.escape(c), k + 1
    return re.compile(out)


def test_the_patterns_read_as_the_docs_say():
    assert regex("a/<name>.jpg").fullmatch("a/x y.jpg") and not regex("a/<name>.jpg").fullmatch("a/b/x.jpg")
    assert regex("[data/]x/{p,q}.csv").fullmatch("data/x/q.csv") and regex("[data/]x/{p,q}.csv").fullmatch("x/p.csv")
    assert regex("v/**").fullmatch("v/a/b/c.png") and not regex("v/**").fullmatch("w/a")


def fixture_of(folder: str) -> str:
    return folder.replace("++", "_pp").replace("-", "_") + "_dir"


@pytest.mark.parametrize("folder", list(benchmarks.suite_folders()))
def test_each_fixture_is_laid_out_as_the_docs_draw_it(folder, request):
    lines = docs_lines()
    assert folder in lines, f"docs/benchmarks.md 'On disk' draws no {folder}/"
    root = Path(request.getfixturevalue(fixture_of(folder)))
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    patterns = [regex(p) for p in lines[folder]]
    assert [f for f in files if not any(p.fullmatch(f) for p in patterns)] == []
    assert [lines[folder][k] for k, p in enumerate(patterns) if not any(p.fullmatch(f) for f in files)] == []


def test_a_suite_root_built_from_the_docs_finds_and_reads_all_eighteen(request, tmp_path):
    folders = benchmarks.suite_folders()
    assert sorted(docs_lines()) == sorted(folders) and len(folders) == 18
    for folder in folders:
        shutil.copytree(request.getfixturevalue(fixture_of(folder)), tmp_path / folder)
    found, missing = suite_root.find(tmp_path)
    assert missing == [] and sorted(found) == sorted(n for names in folders.values() for n in names)
    for name, spec in found.items():
        assert len(benchmarks.load(spec)) > 0, name
