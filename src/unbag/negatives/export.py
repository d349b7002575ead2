"""`unbag negatives`: write typed negatives in DeGLA's layout [{image_id, original, enhanced}, ...]."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from rich.progress import Progress

from ..errors import UnbagError
from ..utils import atomic_write, versions, write_json
from .typed import TYPES, RuleGenerator, WorldGenerator
from ..world.stream import STREAMS, parse_stream


def generator(spec: str, device: str = "cpu"):
    """'rules' or 'llm:MODEL_DIR'."""
    if spec == "rules":
        return RuleGenerator()
    if spec.startswith("llm:"):
        from .llm import LLMGenerator
        return LLMGenerator(spec[4:], device=device)
    raise UnbagError(f"unknown negative generator {spec!r}; use rules or llm:MODEL_DIR")


def export(data: str, out: str | os.PathLike, types: tuple[str, ...] = TYPES, k: int = 4, n: int = 1000,
           seed: int = 0, gen: str = "rules", device: str = "cpu", progress: bool = True) -> Path:
    """Generate k negatives per caption of `data` (a world stream, world[:DIST] / world-flat / world3d: n
    samples; or a caption file) and write them to `out`,
    with OUT.meta.json beside it: how they were made (and, for an LLM, how many answers it kept)."""
    bad = set(types) - set(TYPES)
    if bad:
        raise UnbagError(f"unknown negative types {sorted(bad)}; available: {', '.join(TYPES)}")
    out = Path(out)
    entries, g = [], None
    with Progress(disable=not progress) as bar:
        if data.partition(":")[0] in STREAMS:
            style, dist = parse_stream(data)
            if style == "3d":
                from ..world import stream3d as source
                world = WorldGenerator.for_3d()
            else:
                from ..world import stream as source
                world = WorldGenerator()
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
            from ..benchmarks.common import caption_file, caption_rows
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
    atomic_write(out, json.dumps(entries, indent=1) + "\n")
    meta = {"data": data, "types": list(types), "k": k, "n": len(entries), "seed": seed,
            "generator": "world grammar" if g is None else gen, "llm_answers": getattr(g, "stats", None),
            "versions": versions()}
    write_json(out.with_suffix(".meta.json"), meta)
    return out
