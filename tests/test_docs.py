"""The docs say what the code does: the README's two commands are the ones CI runs, and
docs/sgi.md's options and defaults are the CLI's and SGIConfig's (docs/api.md's signatures:
tests/test_api.py)."""
import re
from dataclasses import fields
from pathlib import Path

from unbag.cli import parser
from unbag.sgi.config import SGIConfig

ROOT = Path(__file__).resolve().parents[1]
FLAG_FIELD = {"--region-mode": "mode"}  # the one SGI flag not named after its field


def _sgi_flags() -> dict[str, str]:
    """`unbag eval`'s SGI options: flag -> its SGIConfig field."""
    p = parser(methods=False, benches=False)
    ev = next(a for a in p._subparsers._group_actions[0].choices.items() if a[0] == "eval")[1]
    group = next(g for g in ev._action_groups if g.title.startswith("SGI options"))
    flags = [s for a in group._group_actions for s in a.option_strings]
    return {f: FLAG_FIELD.get(f, f[2:].replace("-", "_")) for f in flags}


def test_readme_has_the_two_commands_ci_runs():
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci" / "run").read_text()
    setup = re.search(r"## Two commands for a fresh machine\n(.*?)\n## ", readme, re.S).group(1)
    blocks = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(blocks) == 2, blocks
    install, tests = blocks
    assert install.endswith("unbag demo") and "unbag demo" in ci
    assert tests.replace("pip install -e", "pip install -q -e") in ci  # CI's is the same, quiet


def test_every_sgi_flag_is_an_sgi_option_and_every_option_a_flag():
    flags = _sgi_flags()
    assert sorted(flags.values()) == sorted(f.name for f in fields(SGIConfig))


def test_docs_sgi_md_options_and_defaults_are_the_codes():
    doc = (ROOT / "docs" / "sgi.md").read_text()
    rows = re.findall(r"^\| `(--[a-z-]+)` \|[^|]*\|([^|]*)\|", doc, re.M)
    assert len(rows) >= 10
    flags, defaults = _sgi_flags(), {f.name: f.default for f in fields(SGIConfig)}
    for flag, default in rows:
        assert flag in flags, f"docs/sgi.md documents {flag}, which `unbag eval` does not take"
        first = re.match(r"\s*`?([^`;( ]+)`?", default).group(1)  # the general default, before per-benchmark ones
        want = defaults[flags[flag]]
        assert first == str(want) or (isinstance(want, float) and float(first) == want), (flag, first, want)


def test_every_head_option_with_help_is_a_train_flag():
    from unbag.heads import HeadConfig

    p = parser(methods=True, benches=False, sgi=False)
    train = p._subparsers._group_actions[0].choices["train"]
    flags = {s for a in train._actions for s in a.option_strings}
    named = {"--" + f.name.replace("_", "-") for f in fields(HeadConfig) if "help" in f.metadata}
    assert named and named <= flags and {"--kind", "--dim", "--patches"}.isdisjoint(flags)


COMMANDS = r"unbag (demo|eval|suite|run|report|compare|train|features|explain|export|negatives|world (?:build|pool|show))\b"
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]


def _code(text: str) -> list[str]:
    """The code a page shows: its fenced blocks (a line ending in \\ joined to the next) and its inline spans."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    rest = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
    return [b.replace("\\\n", " ") for b in blocks] + re.findall(r"`([^`\n]+)`", rest)


def _commands(p) -> dict[str, object]:
    sub = p._subparsers._group_actions[0].choices
    got = {}
    for name, sp in sub.items():
        if name == "world":
            for w, wp in sp._subparsers._group_actions[0].choices.items():
                got[f"world {w}"] = wp
        else:
            got[name] = sp
    return got


def test_every_flag_the_docs_show_is_one_its_command_takes():
    """Every `unbag COMMAND ... --flag` in a page's code is a flag of that command's parser, and
    every command the parser has is shown somewhere (a page's log, docs/log.md, is history: not checked)."""
    commands = _commands(parser())
    shown: set[str] = set()
    wrong = []
    for page in PAGES:
        if page.name == "log.md":
            continue
        for code in _code(page.read_text()):
            for line in code.split("\n"):
                for m in re.finditer(COMMANDS + r"([^|;#\n]*)", line):
                    cmd = m.group(1)
                    shown.add(cmd)
                    flags = {s for a in commands[cmd]._actions for s in a.option_strings}
                    args = re.split(COMMANDS, m.group(2))[0]  # up to a second command on the line
                    wrong += [f"{page.name}: `unbag {cmd}` has no {f}" for f in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", args)
                              if f not in flags]
    assert not wrong, wrong
    assert shown == set(commands), set(commands) - shown


def test_every_default_the_help_shows_is_the_parsers():
    """`--help` ends each flag's help with its default (unless its text says it), so what a user
    reads there is what runs."""
    for name, sp in _commands(parser()).items():
        for a in sp._actions:
            if a.option_strings and a.default not in (None, False) and a.help and a.default != "==SUPPRESS==":
                assert f"(default: {a.default})" in a.help or "default" in a.help, (name, a.option_strings, a.help)


def test_overview_lists_every_command_and_the_docs_every_suite_benchmark():
    from unbag.benchmarks import BENCHMARKS, suite_folders

    overview = (ROOT / "docs" / "overview.md").read_text()
    table = re.findall(r"^\| `unbag ([a-z ]+?)`", overview, re.M)
    listed = {c.strip() for row in table for c in row.split(" / ")}
    assert {c.split()[0] if c.startswith("world") else c for c in _commands(parser())} <= listed | {"world"}
    bench_doc = (ROOT / "docs" / "benchmarks.md").read_text()
    for folder in suite_folders():
        assert f"### {folder}\n" in bench_doc, folder  # a section per suite folder, the anchor the CLI links
    readme = (ROOT / "README.md").read_text()
    names = re.search(r"The field's compositionality suite \((.*?)\)", readme, re.S).group(1)
    listed = {n.strip().lower().replace("'", "") for n in names.replace("\n", " ").split(",") if n.strip()}
    assert listed == set(suite_folders()), listed ^ set(suite_folders())  # the README names every suite folder
    assert all(BENCHMARKS[n].release for f in suite_folders().values() for n in f)


def test_the_docs_stay_short():
    """docs/ (every page but the lab's dated log, guides included) totals at most 1,500 lines;
    measurements and history go to docs/log.md."""
    pages = [p for p in (ROOT / "docs").glob("*.md") if p.name != "log.md"]
    lines = {p.name: len(p.read_text().splitlines()) for p in pages}
    assert len(pages) >= 8 and sum(lines.values()) <= 1500, lines
