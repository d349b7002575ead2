"""A pool of rendered 3D training samples: the 3D stream rendered once, read by every run after.

Rendering a 64 px CLEVR scene costs about 45 ms of one core (placement and picture), where a
training step of the built-in model eats 128 images in about 0.6 s: rendered on the fly, the 3D
stream starves training about fourfold on 2 cores. `unbag world pool` renders samples 0..N-1 of a
stream (with their twins) into DIR once; `--data pool:DIR` then trains on them, epoch after epoch
in an order drawn from the run's seed, and every method and head fine-tuned on the same stream
reads the same pictures.

DIR/meta.json  {"format": "unbag-pool3d", "version": 1, "render": R, "dist": D, "seed": S,
                "size": PX, "n": N, "shard": K}
DIR/shard-000000.npz ...  per K samples: `images`, `twins` (uint8 [K, PX, PX, 3]; a sample without
                a twin has zeros), `has_twin` (bool [K]) and `meta` (UTF-8 JSON bytes: per sample its
                caption, segments, caption form and scene; its twin's caption, segments, category
                and scene). Read with numpy's allow_pickle=False.
A pool is reused only as a whole: its meta names every input that made it. An interrupted build
keeps its finished shards in `.DIR.partial` beside DIR (with `job.json`, the inputs they were
rendered for); the same command run again renders only the shards missing there.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import UnbagError
from ..utils import atomic_dir, atomic_write, check_out, read_json
from . import captions as cap
from .render3d import PX_3D
from .stream import Sample, Twin
from .styles import world
from .swap3d import scene_from_record, scene_record

WORLD = world("3d")  # the world a pool holds samples of

FORMAT, VERSION, SHARD = "unbag-pool3d", 1, 512


def _form(f: cap.Form) -> dict:
    return {"kind": f.kind, "template": f.template, "order": f.order, "named": list(f.named)}


def _unform(d: dict) -> cap.Form:
    order = d["order"]
    order = (tuple(tuple(g) for g in order) if d["kind"] == "count" else
             (order[0], order[1], order[2]) if d["kind"] == "relation" else tuple(order))
    return cap.Form(d["kind"], d["template"], order, tuple(d["named"]))


def _scene(scene) -> dict:
    objs = [{"shape": o.shape, "color": o.color, "size": o.size, "material": o.material, "xyz": list(o.centre),
             "angle": o.angle} for o in scene.objects]
    return {"objects": objs, **scene_record(scene)}


def _render_shard(job: tuple[int, str, int, int, int]) -> tuple[int, bytes]:
    """Shard `k` as npz bytes: samples k*SHARD .. of the stream, on one torch thread."""
    import io

    from .stream3d import sample, twin
    seed, dist, px, k, n = job
    lo, hi = k * SHARD, min(n, (k + 1) * SHARD)
    images = np.zeros((hi - lo, px, px, 3), np.uint8)
    twins, has = np.zeros_like(images), np.zeros(hi - lo, bool)
    meta = []
    for j, i in enumerate(range(lo, hi)):
        s = sample(seed, i, px, dist)
        t = twin(seed, i, px, s, dist)
        images[j] = s.image
        rec = {"caption": s.caption, "segments": s.segments, "form": _form(s.form), "scene": _scene(s.scene)}
        if t is not None:
            twins[j], has[j] = t.image, True
            rec["twin"] = {"caption": t.caption, "segments": t.segments, "category": t.category,
                           "scene": _scene(t.scene)}
        meta.append(rec)
    buf = io.BytesIO()
    np.savez_compressed(buf, images=images, twins=twins, has_twin=has,
             meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    return k, buf.getvalue()


def build_pool(out: str | os.PathLike, data: str = "world@3d:finetuning", seed: int = 0, n: int = 4096,
               px: int = PX_3D, procs: int = 1, progress: bool = True, overwrite: bool = False) -> Path:
    """Render samples 0..n-1 of a 3D stream (`world@3d:DIST`) and their twins into a pool folder."""
    from rich.progress import track

    from .render3d import render_version
    from .stream import parse_stream
    style, dist = parse_stream(data)
    if style != WORLD.name:
        raise UnbagError(f"--data {data!r}: a pool renders a 3D stream: "
                         + ", ".join(f"world@{WORLD.name}:{d}" for d in WORLD.distributions()))
    if n < 1:
        raise UnbagError(f"--n {n}: at least 1 sample")
    from .styles import check_render
    procs = check_render(px, procs, seed)
    out = check_out(out, "world pool", overwrite)
    meta = {"format": FORMAT, "version": VERSION, "render": render_version(px), "dist": dist, "seed": seed, "size": px,
            "n": n, "shard": SHARD}
    part = _partial(out, meta)
    names = [f"shard-{k:06d}.npz" for k in range((n + SHARD - 1) // SHARD)]
    jobs = [(seed, dist, px, k, n) for k, name in enumerate(names) if not (part / name).exists()]
    if procs > 1 and len(jobs) > 1:
        from multiprocessing import get_context
        pool = get_context("spawn").Pool(procs)
        done = pool.imap_unordered(_render_shard, jobs)
    else:
        pool, done = None, map(_render_shard, jobs)
    try:
        for k, data_bytes in track(done, total=len(jobs), description="world pool", disable=not progress):
            atomic_write(part / names[k], data_bytes)  # kept if the build is interrupted
    finally:
        if pool is not None:
            pool.terminate()
    with atomic_dir(out, "world pool", overwrite) as tmp:
        for name in names:
            os.replace(part / name, tmp / name)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(part)
    return out


def _partial(out: Path, meta: dict) -> Path:
    """The folder of an interrupted build's finished shards, `.OUT.partial`, for these inputs: kept
    when it was rendered for the same ones, emptied when for others (unbag's own: it holds job.json)."""
    part = out.with_name(f".{out.name}.partial")
    job = part / "job.json"
    if part.exists():
        try:
            same = json.loads(job.read_text()) == meta
        except (OSError, ValueError):
            raise UnbagError(f"{part}: not an interrupted `unbag world pool` (no readable job.json); move it "
                             "away and run again") from None
        if not same:
            shutil.rmtree(part)
    part.mkdir(parents=True, exist_ok=True)
    atomic_write(job, json.dumps(meta, indent=2) + "\n")
    return part


def read_meta(root: str | os.PathLike) -> dict:
    """A pool's meta.json, checked: its format and that this unbag renders the same pixels."""
    from .render3d import render_version
    f = Path(root) / "meta.json"
    meta = read_json(f, "missing (not a pool written by `unbag world pool`?)")
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise UnbagError(f"{f}: field 'format'/'version' is {meta.get('format')!r}/{meta.get('version')!r}, "
                         f"expected {FORMAT!r}/{VERSION}")
    now = render_version(meta["size"]) if isinstance(meta.get("size"), int) else None
    if meta.get("render") != now:
        raise UnbagError(f"{f}: rendered by 3D render version {meta.get('render')}, this unbag renders version "
                         f"{now} at its size: build the pool again")
    return meta


def _shard(path: str) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {"images": z["images"], "twins": z["twins"], "has_twin": z["has_twin"],
                "meta": json.loads(z["meta"].tobytes().decode())}


class PoolStream:
    """Sample k of a training run read from a pool: pool sample `order(k)`, every pool sample once
    per epoch, in an order drawn from the run's seed (the stream's `sample` / `twin` interface)."""

    def __init__(self, root: str | os.PathLike, run_seed: int):
        self.root, self.meta = Path(root), read_meta(root)
        self.n, self.run_seed = int(self.meta["n"]), run_seed
        self._order: tuple[int, np.ndarray] | None = None  # (epoch, its order)
        # a run reads the pool in a shuffled order, so every shard is wanted again and again: the
        # stream keeps the shards it has read (a pool's size: 40,960 samples at 64 px, about 1 GB)
        self._shards: dict[int, dict] = {}

    def _where(self, k: int) -> tuple[dict, int]:
        epoch, r = divmod(k, self.n)
        if self._order is None or self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.run_seed, 17, epoch]).permutation(self.n))
        i = int(self._order[1][r])
        if i // SHARD not in self._shards:
            self._shards[i // SHARD] = _shard(str(self.root / f"shard-{i // SHARD:06d}.npz"))
        return self._shards[i // SHARD], i % SHARD

    def sample(self, seed: int, k: int, px: int, dist=None) -> Sample:
        sh, j = self._where(k)
        m = sh["meta"][j]
        scene = scene_from_record(m["scene"]["objects"], m["scene"])
        return Sample(sh["images"][j], m["caption"], m["segments"], scene, _unform(m["form"]))

    def twin(self, seed: int, k: int, px: int, s: Sample | None = None, dist=None) -> Twin | None:
        sh, j = self._where(k)
        if not sh["has_twin"][j]:
            return None
        t = sh["meta"][j]["twin"]
        return Twin(sh["twins"][j], t["caption"], t["segments"], scene_from_record(t["scene"]["objects"], t["scene"]),
                    t["category"])
