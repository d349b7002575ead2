"""`unbag suite`: every compositionality benchmark found under one root, run as a generated plan
(docs/benchmarks.md, "The suite").

ROOT/<folder>/ is what `NAME:DIR` reads; each benchmark declares its folder (`Kind.suite`: ARO's
four read one, `aro`). A benchmark that takes an IMAGE_ROOT looks for its images where its loader
does by default (under its folder), unless ROOT/suite.toml names them:

    [suite]
    crepe = "/data/visual_genome"    # a benchmark name (or its folder); relative paths from ROOT
    sugarcrepe = "coco/val2017"

The plan (one model x the benchmarks found x the protocols) is written to OUT/plan.toml and run
as `unbag run` runs one: cells reused when nothing that made them changed, resumed, recorded.
The suite table (reports/table.py) gives each benchmark's score and their mean, the suite
average as FSC-CLIP (arXiv 2410.05210) defines it.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from . import benchmarks
from .errors import UnbagError
from .utils import read_toml

SUITE_FILE = "suite.toml"


def name_of(spec: str) -> str:
    """A plan name for a model or protocol spec (letters, digits and _ . + - only)."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", spec).strip("-") or "model"


def image_roots(root: Path) -> dict[str, str]:
    """ROOT/suite.toml's [suite] table: benchmark name -> its IMAGE_ROOT (absolute); {} without
    the file. Errors name the file and the key."""
    f = root / SUITE_FILE
    if not f.exists() and not f.is_symlink():
        return {}
    data = read_toml(f)  # a folder, a FIFO or a dangling link named suite.toml is an error, not ignored
    unknown = sorted(set(data) - {"suite"})
    if unknown or not isinstance(data.get("suite", {}), dict):
        raise UnbagError(f"{f}: expected one [suite] table of NAME = \"IMAGE_ROOT\", found "
                         f"{unknown[0] if unknown else 'suite = ' + repr(data['suite'])}")
    folders = benchmarks.suite_folders(extra=True)
    out: dict[str, str] = {}
    for key, value in data.get("suite", {}).items():
        k = benchmarks.BENCHMARKS.get(key)
        names = folders[key] if key in folders else [key] if k is not None and k.suite else []
        if not names:
            raise UnbagError(f"{f}: suite.{key}: not a benchmark of the suite ({', '.join(folders)})")
        if not isinstance(value, str) or not value or "\0" in value:
            raise UnbagError(f"{f}: suite.{key}: a path string (no NUL byte), got {value!r}")
        takes = [n for n in names if benchmarks.BENCHMARKS[n].image_root]
        if not takes:
            raise UnbagError(f"{f}: suite.{key}: {key} reads its images from its own folder; it takes no IMAGE_ROOT")
        path = Path(os.path.expanduser(value))
        path = path if path.is_absolute() else root / path
        if not path.is_dir():
            raise UnbagError(f"{f}: suite.{key}: {path} is {'not a folder' if path.exists() else 'not found'} "
                             "(an image root is the folder the benchmark's images lie in)")
        for n in takes:
            out[n] = str(path)
    return out


def find(root: str | os.PathLike, all_items: bool = False) -> tuple[dict[str, str], list[str]]:
    """The specs of the suite's benchmarks present under `root` (name -> spec, folder by folder),
    and the folders absent; `all_items`: also the readings shown beside the suite (VL-CheckList's
    every item beside the official run's first 1,000 a file)."""
    root = Path(os.path.expanduser(root))
    if not root.is_dir():
        raise UnbagError(f"{root}: suite root not found (a folder holding one folder per benchmark, "
                         "docs/benchmarks.md)")
    images = image_roots(root)
    found, missing = {}, []
    for folder, names in benchmarks.suite_folders(extra=all_items).items():
        d = root / folder
        if not d.is_dir():
            missing.append(folder)
            continue
        for n in names:
            if ":" in str(d):
                raise UnbagError(f"{d}: a benchmark folder whose path holds ':' cannot be named in a spec")
            found[n] = f"{n}:{d}" + (f":{images[n]}" if n in images else "")
    return found, missing


def absent(root: str | os.PathLike, folder: str) -> str:
    """Why the suite found no folder `folder` under `root`, for the line that names it: nothing
    there, something there that is not a folder, or its download still packed."""
    d = Path(os.path.expanduser(root)) / folder
    packed = [p.name for p in (d.with_name(folder + ext) for ext in (".zip", ".tar", ".tar.gz", ".tgz")) if p.exists()]
    if d.is_symlink() and not d.exists():
        return f"{d} is a link to nothing ({os.readlink(d)})"
    if d.exists():
        return f"{d} is there but is not a folder"
    if packed:
        return f"{d.parent / packed[0]} is there, still packed: unpack it as {d}/"
    return f"not found: {d}/"


def plan_text(model: str, found: dict[str, str], protocols: list[str], precision: str = "auto",
              outside: bool = False) -> str:
    """The TOML plan of one model x the benchmarks found x the protocols (`outside`: images may
    lie outside their benchmark's folders, as `unbag eval --images-outside-root`)."""
    q = json.dumps  # a JSON string is a TOML basic string
    names = {name_of(p): p for p in protocols}
    if len(names) != len(protocols):
        raise UnbagError(f"--protocol: two of {', '.join(protocols)} would share a name; give each once")
    lines = ["# written by `unbag suite`: one model x the suite's benchmarks found x the protocols",
             f"precision = {q(precision)}", f"images_outside_root = {str(outside).lower()}", "",
             "[models]", f"{q(name_of(model))} = {q(model)}", "", "[benchmarks]"]
    lines += [f"{q(n)} = {q(spec)}" for n, spec in found.items()]
    lines += ["", "[protocols]"] + [f"{q(n)} = {q(p)}" for n, p in names.items()]
    return "\n".join(lines) + "\n"


def not_applicable(found: dict[str, str], protocols: list[str]) -> list[tuple[str, str, str]]:
    """(benchmark, protocol, why) for each cell a protocol cannot score: it is not run, and the
    suite table says so."""
    return [(n, name_of(p), "global protocol only") for n in found for p in protocols
            if benchmarks.BENCHMARKS[n].global_only and p != "global"]


def run_suite(model: str, root: str | os.PathLike, protocols: list[str], out: str | os.PathLike,
              progress: bool = True, device: str = "cpu", precision: str = "auto",
              outside: bool = False, all_items: bool = False,
              failed: dict[str, str] | None = None) -> tuple[list[dict], list[str], dict[str, str]]:
    """Score every suite benchmark under `root`; return the cells' results, the folders absent and
    the specs found. A benchmark that cannot be read (no item to score, a malformed file) is put in
    `failed` (name -> why) and the suite goes on to the next."""
    from .runner import run_plan

    found, missing = find(root, all_items)
    if not found:
        raise UnbagError(f"{root}: none of the suite's benchmarks found (looked for the folders "
                         f"{', '.join(missing)}; docs/benchmarks.md)")
    text = plan_text(model, found, protocols, precision, outside)
    dest = Path(os.path.expanduser(out))
    with tempfile.TemporaryDirectory() as tmp:  # the plan is checked, and every benchmark read, before OUT is touched
        (Path(tmp) / "plan.toml").write_text(text)
        return run_plan(Path(tmp) / "plan.toml", str(dest), progress=progress, device=device,
                        failed={} if failed is None else failed, recorded=dest / "plan.toml"), missing, found


__all__ = ["absent", "find", "image_roots", "not_applicable", "plan_text", "run_suite", "name_of", "SUITE_FILE"]
