"""The package's layers: no import cycle between subpackages, function-level imports counted."""
import ast
from pathlib import Path

import unbag

ROOT = Path(unbag.__file__).parent


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _files(root: Path) -> dict[str, Path]:
    """module name -> file, for the package at `root` (a package's __init__ under its own name)."""
    return {".".join(f.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): f
            for f in root.rglob("*.py")}


def imports_between_units(root: Path = ROOT) -> dict[str, set[tuple[str, str]]]:
    """unit -> {(imported unit, file)} over every import in the package, wherever it sits; a name
    imported from a module (`from . import __version__`) counts as that module (the root's unit
    is the package's own name)."""
    files = _files(root)
    edges: dict[str, set] = {}
    for mod, targets in module_imports(root).items():
        for t in targets:
            a, b = _unit(mod), _unit(t)
            if a != b:
                edges.setdefault(a, set()).add((b, str(files[mod].relative_to(root))))
    return edges


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether `goal` can be reached from `start` along the graph's edges."""
    seen, todo = set(), [start]
    while todo:
        u = todo.pop()
        if u == goal:
            return True
        if u not in seen:
            seen.add(u)
            todo += graph.get(u, ())
    return False


def test_no_import_cycle_between_subpackages():
    back = unit_cycles()
    assert not back, "\n".join(back)


def module_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the package's modules it imports, wherever the import sits (a package's __init__
    under the package's name; `from . import name` names the module `name` when there is one,
    else the module it is taken from)."""
    files = _files(root)

    def known(t: str) -> str:
        while t not in files and "." in t:
            t = t.rsplit(".", 1)[0]
        return t

    top = root.name
    edges: dict[str, set[str]] = {}
    for mod, f in files.items():
        pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(top)):
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else node.module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == top]
            else:
                continue
            edges.setdefault(mod, set()).update(known(t) for t in targets if known(t) != mod)
    return edges


def unit_cycles(root: Path = ROOT) -> list[str]:
    edges = imports_between_units(root)
    graph = {a: {b for b, _ in v} for a, v in edges.items()}
    return sorted(f"{a} -> {b} ({f}) and back" for a, v in edges.items() for b, f in v if _reaches(graph, b, a))


def module_cycles(root: Path = ROOT) -> list[str]:
    """Every import cycle between two files, anywhere in the package (within a subpackage or across)."""
    edges = module_imports(root)
    return sorted(f"{a} -> {b} and back" for a, bs in edges.items() for b in bs if _reaches(edges, b, a))


def test_no_two_files_import_each_other_anywhere():
    back = module_cycles()
    assert not back, "\n".join(back)


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package `unbag` under tmp_path holding `files` (path -> source)."""
    root = tmp_path / "unbag"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_checks_find_planted_cycles(tmp_path):
    # through the package root, as utils once took __version__ from it while the root's API imports utils
    root = _plant(tmp_path, {"__init__.py": "__version__ = '0'\ndef __getattr__(n):\n    from . import api\n",
                             "api.py": "from . import utils\n", "utils.py": "def v():\n    from . import __version__\n"})
    assert any(c.startswith("utils -> unbag") for c in unit_cycles(root))
    # two files of one subpackage, one import inside a function
    root = _plant(tmp_path / "b", {"__init__.py": "", "world/__init__.py": "", "world/io.py": "from .cache import k\n",
                                   "world/cache.py": "def f():\n    from . import io\n"})
    assert module_cycles(root) == ["unbag.world.cache -> unbag.world.io and back",
                                   "unbag.world.io -> unbag.world.cache and back"]
    assert unit_cycles(_plant(tmp_path / "c", {"__init__.py": "", "a/__init__.py": "from ..b import x\n",
                                               "b/__init__.py": "from .. import a\n"})) != []


def test_the_file_check_sees_a_cycle_through_a_function_level_import():
    # models/__init__.py imports models/overlay.py inside a function: the edge is seen
    assert "unbag.models.overlay" in module_imports()["unbag.models"]


def test_the_check_sees_function_level_imports(tmp_path):
    # the benchmarks -> world edge comes from inside functions of benchmarks/ctrl.py and retrieval.py
    files = {f for b, f in imports_between_units()["benchmarks"] if b == "world"}
    assert "benchmarks/retrieval.py" in files


def _compared_strings(tree: ast.AST):
    """(line, string) of every string constant a comparison (==, !=, in, not in) tests against."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                vals = list(side.elts) if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                yield from ((node.lineno, v.value) for v in vals if isinstance(v, ast.Constant) and isinstance(v.value, str))


def test_no_shared_module_compares_a_benchmark_head_or_method_name():
    """Benchmark names are compared only in world/ and benchmarks/, a head's only in its own file, a
    training method's only in its objective's file (models/ is exempt from method names: `clip` is
    also a model family there); everything else reads what the registries declare."""
    from unbag.benchmarks import BENCHMARKS
    from unbag.heads import HEADS
    from unbag.training.objectives import OBJECTIVES

    found = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        for line, s in _compared_strings(ast.parse(f.read_text())):
            if s in BENCHMARKS and not rel.startswith(("world/", "benchmarks/")):
                found.append(f"{rel}:{line}: benchmark {s!r}")
            if s in HEADS and rel != f"heads/{HEADS[s].__module__.rsplit('.', 1)[1]}.py":
                found.append(f"{rel}:{line}: head {s!r}")
            if s in OBJECTIVES and not rel.startswith("models/") \
                    and rel != f"training/objectives/{OBJECTIVES[s].__module__.rsplit('.', 1)[1]}.py":
                found.append(f"{rel}:{line}: method {s!r}")
    assert not found, found


def world_literals(root: Path = ROOT) -> list[str]:
    """Every string constant outside world/ that spells a world's name."""
    from unbag.world.styles import WORLDS

    found = []
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel.startswith("world/"):
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Constant) and node.value in WORLDS:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_world_is_named_outside_world():
    """A world is declared once (world/worlds/): no file outside world/ spells a world's name as a
    string of its own; everything else asks the declaration."""
    found = world_literals()
    assert not found, found


def test_the_world_check_finds_a_planted_world_literal(tmp_path):
    from unbag.world.styles import WORLDS

    name = next(iter(WORLDS))
    root = _plant(tmp_path, {"__init__.py": "", "world/ok.py": f"W = {name!r}\n",
                             "reports/bad.py": f"def f(style):\n    return style == {name!r}\n"})
    assert world_literals(root) == [f"reports/bad.py:2: {name!r}"]
