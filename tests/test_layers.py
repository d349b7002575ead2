"""The package's layers: no import cycle between subpackages, function-level imports counted."""
import ast
from pathlib import Path

import unbag

ROOT = Path(unbag.__file__).parent


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_between_units() -> dict[str, set[tuple[str, str]]]:
    """unit -> {(imported unit, file)} over every import in the package, wherever it sits."""
    edges: dict[str, set] = {}
    for f in ROOT.rglob("*.py"):
        rel = f.relative_to(ROOT.parent).with_suffix("")
        mod = ".".join(rel.parts)
        pkg = mod[:-len(".__init__")] if mod.endswith(".__init__") else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                targets = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("unbag"):
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("unbag")]
            for t in targets:
                a, b = _unit(mod), _unit(t)
                if a != b:
                    edges.setdefault(a, set()).add((b, str(f.relative_to(ROOT))))
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
    edges = imports_between_units()
    graph = {a: {b for b, _ in v} for a, v in edges.items()}
    back = sorted(f"{a} -> {b} ({f}) and back" for a, v in edges.items() for b, f in v if _reaches(graph, b, a))
    assert not back, "\n".join(back)


def module_imports() -> dict[str, set[str]]:
    """module -> the package's modules it imports, wherever the import sits (a package's __init__
    under the package's name; `from . import name` names the module `name` when there is one)."""
    files = {}
    for f in ROOT.rglob("*.py"):
        mod = ".".join(f.relative_to(ROOT.parent).with_suffix("").parts)
        files[mod.removesuffix(".__init__")] = f

    def known(t: str) -> str:
        while t not in files and "." in t:
            t = t.rsplit(".", 1)[0]
        return t

    edges: dict[str, set[str]] = {}
    for mod, f in files.items():
        pkg = mod if f.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("unbag")):
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else node.module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("unbag")]
            else:
                continue
            edges.setdefault(mod, set()).update(known(t) for t in targets if known(t) != mod)
    return edges


def test_no_import_cycle_between_files_of_one_subpackage():
    edges = module_imports()
    unit = {m: _unit(m) for m in edges}
    inside = {a: {b for b in bs if _unit(b) == unit[a]} for a, bs in edges.items()}
    back = sorted(f"{a} -> {b} and back" for a, bs in inside.items() for b in bs if _reaches(inside, b, a))
    assert not back, "\n".join(back)


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


def test_no_world_is_named_outside_world():
    """A world is declared once (world/worlds/): no file outside world/ spells a world's name as a
    string of its own; everything else asks the declaration."""
    from unbag.world.styles import WORLDS

    found = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel.startswith("world/"):
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Constant) and node.value in WORLDS:
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_the_world_check_sees_a_world_literal(tmp_path):
    from unbag.world.styles import WORLDS

    tree = ast.parse(f"style = {next(iter(WORLDS))!r}\nif style == 'x': pass")
    assert any(isinstance(n, ast.Constant) and n.value in WORLDS for n in ast.walk(tree))
