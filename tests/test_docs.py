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
