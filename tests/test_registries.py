"""One way to register a thing: every registry is the union of the module-level tables its files
declare, found by `unbag.utils.collect`; no decorator, no hand-kept list, no module named by a string."""
import ast
import sys
from pathlib import Path

import pytest

import unbag
from unbag.utils import collect

SRC = Path(unbag.__file__).parent


def _registries() -> list[tuple[str, dict, list[str], str]]:
    from unbag import benchmarks, models, protocols
    from unbag.heads import HEADS
    from unbag.training.objectives import OBJECTIVES
    from unbag.world.styles import WORLDS
    generated = {k for k in benchmarks.BENCHMARKS if k not in collect("unbag.benchmarks", "BENCHMARKS")}
    return [("models", models.MODELS, ["unbag.models"], "MODELS"),
            ("objectives", OBJECTIVES, ["unbag.training.objectives"], "OBJECTIVES"),
            ("protocols", protocols.PROTOCOLS, ["unbag.scoring", "unbag.sgi", "unbag.heads", "unbag.ttm"], "PROTOCOLS"),
            ("heads", HEADS, ["unbag.heads"], "HEADS"),
            ("benchmarks", {k: v for k, v in benchmarks.BENCHMARKS.items() if k not in generated},
             ["unbag.benchmarks"], "BENCHMARKS"),
            ("worlds", WORLDS, ["unbag.world.worlds"], "WORLDS")]


@pytest.mark.parametrize("kind", ["models", "objectives", "protocols", "heads", "benchmarks", "worlds"])
def test_each_registry_is_what_its_files_declare(kind):
    (name, registry, places, table), = [r for r in _registries() if r[0] == kind]
    declared = {k: v for p in places for k, v in collect(p, table).items()}
    assert registry == declared and len(registry) >= 2


def test_collect_finds_a_new_file_and_refuses_a_name_declared_twice(tmp_path, monkeypatch):
    pkg = tmp_path / "plugin_things"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("THINGS = {'one': 1}\n")
    (pkg / "b.py").write_text("THINGS = {'two': 2}\nOTHER = {'x': 0}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert collect("plugin_things", "THINGS") == {"one": 1, "two": 2}
    (pkg / "c.py").write_text("THINGS = {'one': 3}\n")
    for m in [m for m in sys.modules if m.startswith("plugin_things")]:
        monkeypatch.delitem(sys.modules, m)
    with pytest.raises(RuntimeError, match=r"'one' is declared twice: in plugin_things.a and plugin_things.c"):
        collect("plugin_things", "THINGS")


def test_no_decorator_registry_and_no_module_named_by_a_string():
    """Nothing registers by decorator, and only `collect` imports a module by name: every other
    import (a world's parts among them) is a plain import that tools can follow."""
    found = []
    for f in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("register"):
                found.append(f"{f.relative_to(SRC)}: def {node.name}")
            if isinstance(node, ast.Attribute) and node.attr == "import_module" and f.name != "utils.py":
                found.append(f"{f.relative_to(SRC)}:{node.lineno}: import_module")
    assert not found, found
