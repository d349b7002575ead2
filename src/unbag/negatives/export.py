"""`unbag negatives`: write typed negatives in DeGLA's layout [{image_id, original, enhanced}, ...]."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from rich.progress import Progress

from ..benchmarks.common import caption_file
from ..errors import UnbagError
from ..utils import at_least, atomic_files, check_file_out, versions
from ..world.stream import is_stream, parse_stream
from ..world.styles import world as world_of
from .typed import TYPES, RuleGenerator, WorldGenerator


def generator(spec: str, device: str = "cpu"):
    """'rules' or 'llm:MODEL_DIR'."""
    if spec == "rules":
        return RuleGenerator()
    if spec.startswith("llm:"):
        from .llm import LLMGenerator
        return LLMGenerator(spec[4:], device=device)
    raise UnbagError(f"unknown negative generator {spec!r}; use rules or llm:MODEL_DIR")


def written_by_negatives(path: Path) -> bool:
    """Whether a file is a negatives file or its .meta.json that `unbag negatives` wrote."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    if path.name.endswith(".meta.json"):
        return isinstance(data, dict) and "unbag" in (data.get("versions") or {}) and "generator" in data
    return isinstance(data, list) and all(isinstance(e, dict) and {"image_id", "original", "enhanced"} <= set(e)
                                          for e in data[:3])


def export(data: str, out: str | os.PathLike, types: tuple[str, ...] = TYPES, k: int = 4, n: int = 1000,
           seed: int = 0, gen: str = "rules", device: str = "cpu", progress: bool = True,
           overwrite: bool = False) -> Path:
    """Generate k negatives per caption of `data` (a world stream, world[@WORLD][:DIST]: n samples; or a
    caption file) and write them to `out`,
    with OUT.meta.json beside it: how they were made (and, for an LLM, how many answers it kept).
    Files there that unbag did not write are refused unless `overwrite`; the caption file read, always."""
    bad = set(types) - set(TYPES)
    if bad:
        raise UnbagError(f"unknown negative types {sorted(bad)}; available: {', '.join(TYPES)}")
    if not types:
        raise UnbagError(f"--types names no type: name at least one of {', '.join(TYPES)}")
    at_least("k", k)
    at_least("n", n)
    at_least("seed", seed, 0)
    inputs = () if is_stream(data) else (caption_file(data),)
    out = check_file_out(out, "negatives", written_by_negatives, overwrite, inputs,
                         also=(Path(os.path.expanduser(out)).with_suffix(".meta.json"),))
    entries, g = [], None
    with Progress(disable=not progress) as bar:
        if is_stream(data):
            style, dist = parse_stream(data)
            source = world_of(style).part("stream")
            world = WorldGenerator.for_world(world_of(style))
            task = bar.add_task("negatives", total=n)
            for i in range(n):
                s = source.sample(seed, i, dist=dist)
                rng = np.random.default_rng([seed, 13, i])
                got = world.generate_for(s.scene.objects, s.form, k, rng, types)
                entries.append({"image_id": i, "original": s.caption, "enhanced": [x for _, x in got],
                                "types": [t for t, _ in got],
                                "world": {"style": style, "distribution": dist, "seed": seed, "index": i}})
                bar.advance(task)
        else:
            from ..benchmarks.common import caption_rows
            path = Path(caption_file(data))
            if not path.is_file():
                raise UnbagError(f"{path}: caption file not found")
            rows = caption_rows(path)
            if not rows:
                raise UnbagError(f"{path}: no image/caption rows")
            g = RuleGenerator() if gen == "rules" else generator(gen, device)
            task = bar.add_task("negatives", total=len(rows))
            for i, (image, caps) in enumerate(rows):
                rng = np.random.default_rng([seed, 13, i])
                got = g.generate(caps[0], k, rng, types)
                entries.append({"image_id": i, "image": os.path.relpath(image, out.parent),
                                "original": caps[0], "enhanced": [x for _, x in got],
                                "types": [t for t, _ in got]})
                bar.advance(task)
    meta = {"data": data, "types": list(types), "k": k, "n": len(entries), "seed": seed,
            "generator": "world grammar" if g is None else gen, "llm_answers": getattr(g, "stats", None),
            "versions": versions()}
    atomic_files([(out.with_suffix(".meta.json"), json.dumps(meta, indent=2) + "\n"),
                  (out, json.dumps(entries, indent=1) + "\n")])
    return out
