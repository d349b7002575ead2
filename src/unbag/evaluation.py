"""`unbag eval`: model x benchmark x protocol -> score tensor -> metrics -> results files."""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from . import benchmarks, metrics, models, protocols
from .benchmarks.base import Benchmark
from .benchmarks.classification import ClassificationSet
from .benchmarks.retrieval import RetrievalSet
from .cache import JobCache
from .errors import UnbagError, warn
from .metrics.intervals import Part, interval_config
from .metrics.retrieval import recall
from .models.base import Backend, config_id, weights_id
from .utils import at_least, atomic_files, check_file_out, versions


def per_item_records(bench, scores: "Blocks", per_item: dict, chunk: int = 4096):
    """One record per item, one at a time: its ids and groups, its own score block, its metric
    values (those that apply to its shape) and the metrics on which it tied."""
    names = [m for m in per_item if not m.startswith("tie/")]
    for lo in range(0, len(bench.items), chunk):  # Python numbers a chunk at a time, not a tensor index per item
        values = {m: per_item[m][lo:lo + chunk].tolist() for m in per_item}
        for j, it in enumerate(bench.items[lo:lo + chunk]):
            rec = {"id": it.id, **it.group, "scores": [[round(v, 6) for v in row] for row in scores.block(lo + j)]}
            here = [m for m in names if not math.isnan(values[m][j])]
            rec.update({m: float(values[m][j]) for m in here})
            rec["ties"] = [m for m in here if values[f"tie/{m}"][j]]
            yield rec


UPSAMPLE_WARN = 1.5  # a model's input this many times a benchmark's picture side, or more: warned


def upsampled(backend: Backend, b) -> float | None:
    """How many times the model's preprocessing enlarges a benchmark's pictures (those of a fixed
    side: a generated or built ctrl), warned about when it exceeds UPSAMPLE_WARN: a real model
    would read blurred objects that look nothing like its own training pictures."""
    side = getattr(b, "image_size", None)
    if not side:
        return None
    ratio = min(backend.image_size) / side
    if ratio > UPSAMPLE_WARN:
        h, w = backend.image_size
        warn(f"{b.spec}: its pictures are {side} px and {backend.spec} reads {h}x{w} px: its preprocessing enlarges "
             f"them {ratio:.1f}x, blurring small objects; build the benchmark at the model's size "
             f"(unbag world build --size {min(h, w)})")
    return ratio


def finite(scores: torch.Tensor, model: str, bench: str) -> torch.Tensor:
    """Refuse scores that are NaN or infinite (broken weights): they would count as wrong answers."""
    bad = int((~torch.isfinite(scores)).sum())
    if bad:
        raise UnbagError(f"model {model}: {bad} of {scores.numel()} scores on {bench} are NaN or infinite "
                         "(its weights or inputs are broken); no results written")
    return scores


def tokenized_alike(backend: Backend, b: Benchmark) -> int:
    """Items with two different captions that the model's tokenizer makes the same tokens (its
    context length cuts them, or they differ only in case or spacing): they can only tie, so they
    are counted and reported rather than scored silently."""
    same = 0
    for idx in b.items.shapes().values():  # an item's captions as indices into its shape's distinct captions
        texts, at = b.items.take(idx).captions()
        if not texts or at.shape[1] < 2:
            continue
        ids = backend.tokenize(texts)
        _, tokens = np.unique(ids.numpy(), axis=0, return_inverse=True)  # one number per distinct token row
        tok = tokens.reshape(-1)[at]
        at, tok = np.sort(at, axis=1), np.sort(tok, axis=1)
        distinct = lambda a: 1 + (a[:, 1:] != a[:, :-1]).sum(axis=1)  # noqa: E731
        same += int((distinct(tok) < distinct(at)).sum())
    return same


def sharded_scores(score_fn, backend, b, batch_size: int, progress: bool, world_size: int) -> torch.Tensor:
    """The score tensor; under torchrun each rank scores a contiguous slice of the items and rank 0
    gathers them in order (other ranks get their own slice back)."""
    if world_size == 1:
        return score_fn(backend, b, batch_size=batch_size, progress=progress)
    import dataclasses

    import torch.distributed as tdist
    rank, n = tdist.get_rank(), len(b.items)
    lo, hi = rank * n // world_size, (rank + 1) * n // world_size
    part = score_fn(backend, dataclasses.replace(b, items=b.items[lo:hi]), batch_size=batch_size,
                    progress=progress and rank == 0) if hi > lo else torch.empty(0)
    parts = [None] * world_size
    tdist.all_gather_object(parts, part.cpu())
    return torch.cat([p for p in parts if p.numel()])


class Blocks:
    """Each item's score block [images, captions], held as one tensor per shape of items."""

    def __init__(self, n: int):
        self.parts: list[torch.Tensor] = []
        self.part = np.zeros(n, dtype=np.int32)  # item -> its shape's tensor
        self.row = np.zeros(n, dtype=np.int64)  # item -> its row there

    def add(self, idx: np.ndarray, scores: torch.Tensor) -> None:
        self.part[idx], self.row[idx] = len(self.parts), np.arange(len(idx))
        self.parts.append(scores)

    def block(self, n: int) -> list[list[float]]:
        """Item n's scores, as Python numbers."""
        return self.parts[self.part[n]][self.row[n]].tolist()


def scored(b: Benchmark, score_fn, backend, batch_size: int, progress: bool, world_size: int,
           rank: int) -> tuple[Blocks, dict[str, torch.Tensor]] | None:
    """(each item's score block, per-item values by the benchmark's metric and text metric, NaN
    where a metric does not apply to an item's shape): each shape's items are scored as one tensor
    (a protocol remembers the encodings they share in the job's cache). None on ranks other than 0."""
    import dataclasses

    n = len(b.items)
    blocks = Blocks(n)
    per_item: dict[str, torch.Tensor] = {}
    for shape, idx in b.items.shapes().items():
        part = dataclasses.replace(b, items=b.items.take(idx))
        s = sharded_scores(score_fn, backend, part, batch_size, progress, world_size)
        if rank != 0:
            continue
        vals = b.metric(finite(s, backend.spec, b.spec), part.items)
        if b.text_metric is not None:
            from .scoring.encode import encode_texts
            t = encode_texts(backend, [c for it in part.items for c in it.captions])
            vals = vals | b.text_metric(t.view(len(idx), shape[1], -1), part.items)
        at = torch.from_numpy(idx)
        for k, v in vals.items():
            if k not in per_item:
                per_item[k] = torch.zeros(n, dtype=torch.bool) if k.startswith("tie/") else torch.full((n,), math.nan)
            per_item[k][at] = v.to(per_item[k].dtype)
        blocks.add(idx, s)
    return (blocks, per_item) if rank == 0 else None


def item_metrics(b, per_item: dict[str, torch.Tensor], parts: dict | None = None) -> tuple[dict, dict, dict]:
    """Per-item values bucketed by the benchmark's grouping ('split/category/metric' or
    'subset/metric', with 'KEY=VALUE/metric' for every other group key), plus its own breakdowns:
    (metrics, ties, counts); `parts`, when given, gets how each bucket's value was made."""
    from .metrics.summary import summarize

    names = tuple(m for m in per_item if not m.startswith("tie/"))
    groups = b.items.groups()
    if b.grouping == "split/category":
        flat, ties, counts = metrics.aggregate(per_item, groups, names, parts)
    else:
        flat, ties, counts = summarize(per_item, [g["subset"] for g in groups], names, b.macro, parts)
        for key in sorted({k for g in groups for k in g} - {"subset"}):  # e.g. Winoground's tags
            more: dict = {}
            f2, t2, c2 = summarize(per_item, [f"{key}={g[key]}" for g in groups], names, parts=more)
            flat.update({k: v for k, v in f2.items() if "=" in k})
            ties.update({k: v for k, v in t2.items() if "=" in k})
            counts.update({k: v for k, v in c2.items() if "=" in k})
            if parts is not None:
                parts.update({k: v for k, v in more.items() if "=" in k})
    for key, of in b.composed.items():
        if all(k in flat for k in of):
            flat[key] = sum(w * flat[k] for k, w in of.items())
            if parts is not None:
                parts[key] = Part("macro", of=tuple(of), weights=tuple(of.values()))
    if b.breakdown is not None:
        flat.update(b.breakdown(per_item, b.items))
    return flat, ties, counts


def item_intervals(b, per_item: dict[str, torch.Tensor], flat: dict, parts: dict) -> tuple[dict, dict]:
    """(intervals, methods) of every metric of an item benchmark (metrics/intervals.py): its
    breakdowns recomputed on resampled items, each drawn copy of a cluster (`b.cluster`) its own."""
    from dataclasses import replace

    from .metrics.intervals import item_intervals as intervals

    def breakdown(draw: list[tuple[int, int]]) -> dict[str, float]:
        idx = [i for i, _ in draw]
        items = [b.items[i] if not b.cluster else
                 replace(b.items[i], meta={**b.items[i].meta, b.cluster: (b.items[i].meta.get(b.cluster), d)})
                 for i, d in draw]
        return b.breakdown({k: v[idx] for k, v in per_item.items()}, items)

    clusters = [it.meta.get(b.cluster) for it in b.items] if b.cluster else None
    extra = tuple(k for k in flat if k not in parts)
    return intervals(per_item, parts, len(b.items), clusters, breakdown if b.breakdown else None, extra)


def written_by_eval(path: Path) -> bool:
    """Whether a file is a results file or a per-item file unbag wrote (what `eval` replaces
    without --overwrite)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
        if path.name.endswith(".items.jsonl"):
            first = json.loads(head.split(b"\n", 1)[0] or b"null")
            return isinstance(first, dict) and {"id", "scores", "ties"} <= set(first)
        data = json.loads(path.read_bytes())
        return isinstance(data, dict) and isinstance(data.get("versions"), dict) and "unbag" in data["versions"] \
            and "metrics" in data
    except (OSError, ValueError, RecursionError):
        return False


def items_path(out: str | Path) -> Path:
    """The per-item file written beside a results file."""
    return Path(out).with_suffix(".items.jsonl")


def check_results_out(out: str, bench: "str | Benchmark | None" = None, overwrite: bool = False) -> Path:
    """Refuse, before any scoring, a results path unbag must not write: a folder, a file unbag did
    not write there or beside it (X.items.jsonl) unless `overwrite`, a file inside the benchmark's
    own folders (never), or a place it cannot write."""
    roots: list = []
    spec = bench if isinstance(bench, str) else getattr(bench, "spec", None)
    if spec:
        try:
            if not benchmarks.generated(spec):
                roots += benchmarks.image_roots(spec)
        except UnbagError:
            pass
    path = Path(os.path.expanduser(out))
    also = (items_path(path),) if path.name and path.name not in (".", "..") else ()
    return check_file_out(out, "eval", written_by_eval, overwrite, roots, also=also)


def evaluate(model: str | Backend, bench: str | Benchmark, protocol: str = "global", out: str | None = None,
             batch_size: int = 256, device: str = "cpu", seed: int = 0, progress: bool = True,
             options: dict | None = None, precision: str = "auto", cache: JobCache | None = None,
             cell: dict | None = None, overwrite: bool = False, images_outside_root: bool = False) -> dict:
    """Score `model` (a spec or a loaded backend) on `bench` (a spec or a loaded benchmark) under
    `protocol`; with `out`, write the results JSON and, for scored items, per-item JSONL beside it
    (as one unit; the JSON records the per-item file's hash). `cache`: the job's memory the protocol
    may reuse (a plan's; a fresh one when None). `cell`: a plan's names for this result (recorded).
    `overwrite`: replace files at `out` that unbag did not write. `images_outside_root`: read a
    benchmark's images wherever its file points (recorded in the results)."""
    at_least("batch_size", batch_size)
    at_least("seed", seed, 0)
    if out:
        check_results_out(out, bench, overwrite)
    from .scoring.encode import PRECISIONS, precision_of
    if precision not in PRECISIONS:
        raise UnbagError(f"--precision {precision!r}: one of {', '.join(PRECISIONS)}")
    t0 = time.perf_counter()
    protocols.lookup(protocol)  # an unknown protocol is refused before a benchmark is generated or read
    from . import dist
    backend, model_s = None, 0.0
    if isinstance(bench, str) and benchmarks.sized(bench):
        # a generated benchmark, drawn at the model's input side (ctrl) on the evaluation's device:
        # the model is loaded first
        rank, world_size, device = dist.init(str(model.device if isinstance(model, Backend) else device))
        backend = model if isinstance(model, Backend) else models.load(model, device=device)
        model_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        bench = benchmarks.load(bench, seed=seed, outside_root=images_outside_root, progress=progress,
                                px=benchmarks.drawn_size(bench, min(backend.image_size)), device=str(backend.device))
    b = bench if isinstance(bench, (Benchmark, RetrievalSet, ClassificationSet)) else \
        benchmarks.load(bench, seed=seed, outside_root=images_outside_root)
    spec = model.spec if isinstance(model, Backend) else model
    protocol = protocols.resolve(protocol, spec)
    score_fn, recorded = protocols.build(protocol, options, b, cache)
    if isinstance(b, (RetrievalSet, ClassificationSet)) and protocol != "global":
        raise UnbagError(f"{b.name}: {'retrieval' if isinstance(b, RetrievalSet) else 'zero-shot classification'} "
                         "is scored with the global protocol only (every image against every text); SGI and "
                         "heads score the candidate pairs of an item")
    t1 = time.perf_counter()
    if backend is None:
        rank, world_size, device = dist.init(str(model.device if isinstance(model, Backend) else device))
        backend = model if isinstance(model, Backend) else models.load(model, device=device)
    before, backend.precision = backend.precision, precision
    try:
        t2 = time.perf_counter()
        # (benchmark, model) load times and the scoring's start; a model loaded first counts as its own
        return _evaluate(backend, b, spec, protocol, score_fn, recorded, out, batch_size, seed, progress,
                         rank, world_size, (t1 - t0, t2 - t1 + model_s, t2), precision_of(backend), cell)
    finally:
        backend.precision = before


def _evaluate(backend, b, spec, protocol, score_fn, recorded, out, batch_size, seed, progress, rank, world_size,
              times, precision, cell=None) -> dict:
    bench_s, model_s, t2 = times
    per_item, alike = None, None
    if isinstance(b, RetrievalSet):
        (flat, bounds, how), counts, extra = retrieval_metrics(backend, b, batch_size, progress), {"all/retrieval": len(b.images)}, {}
        ties, n_items = {}, len(b.images)
    elif isinstance(b, ClassificationSet):
        (flat, bounds, how), counts = classification_metrics(backend, b, batch_size, progress), {"all": len(b.images)}
        ties, n_items, extra = {}, len(b.images), {"templates": list(b.templates)}
    else:
        if rank == 0:
            upsampled(backend, b)
        got = scored(b, score_fn, backend, batch_size, progress, world_size, rank)
        if got is None:  # rank 0 computes the metrics once and writes the files
            return {}
        scores, per_item = got
        alike = tokenized_alike(backend, b)
        if alike:
            warn(f"{b.spec}: {alike} item(s) have different captions that {spec}'s tokenizer makes the same tokens "
                 "(cut by its context length, or differing only in case or spacing); they can only tie, and are "
                 "counted in the results as 'tokenized_alike'")
        parts: dict = {}
        flat, ties, counts = item_metrics(b, per_item, parts)
        bounds, how = item_intervals(b, per_item, flat, parts)
        n_items, extra = len(b.items), {}
    t3 = time.perf_counter()
    res = {
        **({"cell": cell} if cell else {}),
        "model": spec, "model_id": weights_id(backend), "model_config_id": config_id(backend),
        "random_weights": bool(backend.random_weights),
        "protocol": protocol, "recipe": protocols.recipe(protocol, recorded),
        **({"transductive": True} if protocols.lookup(protocol)[0].transductive else {}),
        "benchmark": {"name": b.name, "spec": b.spec, **b.info},
        "metrics": flat, "intervals": bounds, "interval_methods": how, "interval_config": interval_config(),
        **({"composed": b.composed} if getattr(b, "composed", None) else {}),
        "ties": ties, "counts": counts, "n_items": n_items,
        **({"tokenized_alike": alike} if alike is not None else {}),
        "seed": seed,
        "config": {"batch_size": batch_size, "device": str(backend.device), "protocol": protocol, "precision": precision,
                   "processes": world_size, "options": {**recorded, **extra}},
        "timings": {"load_benchmark_s": bench_s, "load_model_s": model_s, "score_s": t3 - t2,
                    "metrics_s": time.perf_counter() - t3},
        "versions": versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if out:
        out_path = Path(os.path.expanduser(out))
        files: list = []
        if per_item is not None:
            digest = hashlib.sha256()  # items_hash of the file, taken as its lines are written

            def lines():
                for r in per_item_records(b, scores, per_item):
                    line = (json.dumps(r, allow_nan=False) + "\n").encode()
                    digest.update(line)
                    yield line
            res["per_item"] = items_path(out_path).name
            files.append((items_path(out_path), lines()))

        def results() -> bytes:
            if per_item is not None:
                res["per_item_sha256"] = digest.hexdigest()
            return (json.dumps(res, indent=2) + "\n").encode()
        atomic_files(files + [(out_path, results)])
    return res


def classification_metrics(backend: Backend, b: ClassificationSet, batch_size: int, progress: bool) -> tuple:
    """Zero-shot top-1, top-5 (only with more than 5 classes, as CLIP_benchmark) and mean per-class
    recall: class embedding = mean of its normalised template embeddings; a tie counts against
    the model (strict: the true class must score above every other). (metrics, intervals, methods)."""
    import torch.nn.functional as F

    from .metrics.zeroshot import zeroshot
    from .scoring.encode import encode_images, encode_texts

    img = encode_images(backend, b.images, None, batch_size, None, progress)
    prompts = b.prompts()
    cls = F.normalize(encode_texts(backend, prompts, progress=progress).view(len(b.classes), len(b.templates), -1)
                      .mean(1), dim=-1)
    sim = finite(img @ cls.T, backend.spec, b.spec)
    got, bounds, how = zeroshot(sim, b.labels, intervals=True)
    return ({f"all/zeroshot/{k}": v for k, v in got.items()}, {f"all/zeroshot/{k}": v for k, v in bounds.items()},
            {f"all/zeroshot/{k}": v for k, v in how.items()})


def retrieval_metrics(backend: Backend, b: RetrievalSet, batch_size: int, progress: bool) -> tuple:
    """Recall@1/5/10 both ways from the global similarity matrix: (metrics, intervals, methods)."""
    from .scoring.encode import encode_images, encode_texts

    img = encode_images(backend, b.images, None, batch_size, b.image_size, progress)
    txt = encode_texts(backend, b.texts, progress=progress)
    sim = finite(img @ txt.T, backend.spec, b.spec)
    got, bounds, how = recall(sim, b.image_texts, intervals=True)
    return ({f"all/retrieval/{k}": v for k, v in got.items()}, {f"all/retrieval/{k}": v for k, v in bounds.items()},
            {f"all/retrieval/{k}": v for k, v in how.items()})
