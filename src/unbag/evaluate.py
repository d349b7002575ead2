"""`unbag eval`: model x benchmark x protocol -> score tensor -> metrics -> results files."""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from . import benchmarks, metrics, models, scoring
from .benchmarks.retrieval import RetrievalSet
from .errors import UnbagError
from .metrics.retrieval import recall
from .reports.table import print_results
from .utils import atomic_write, versions, write_json


def per_item_records(bench, scores: torch.Tensor, per_item: dict) -> list[dict]:
    out = []
    for n, it in enumerate(bench.items):
        rec = {"id": it.id, **it.group, "scores": [[round(float(v), 6) for v in row] for row in scores[n]]}
        rec.update({m: float(per_item[m][n]) for m in metrics.METRICS})
        rec["ties"] = [m for m in metrics.METRICS if bool(per_item[f"tie/{m}"][n])]
        out.append(rec)
    return out


def evaluate(model: str, bench: str, protocol: str = "global", out: str | None = None,
             batch_size: int = 256, device: str = "cpu", seed: int = 0, progress: bool = True,
             show: bool = True, options: dict | None = None, loaded=None) -> dict:
    """Run one evaluation; print the table and, with `out`, write results JSON + per-item JSONL."""
    t0 = time.perf_counter()
    b = loaded if loaded is not None else benchmarks.load(bench, seed=seed)
    if isinstance(b, RetrievalSet):
        return evaluate_retrieval(model, b, protocol, out, batch_size, device, progress, show, t0)
    score_fn, recorded = scoring.build(protocol, options)
    t1 = time.perf_counter()
    backend = models.load(model, device=device)
    t2 = time.perf_counter()
    scores = score_fn(backend, b, batch_size=batch_size, progress=progress)
    t3 = time.perf_counter()
    per_item = metrics.winoground(scores)
    flat, ties, counts = metrics.aggregate(per_item, [it.group for it in b.items], metrics.METRICS)
    res = {
        "model": model, "protocol": protocol,
        "benchmark": {"name": b.name, "spec": bench, **b.info},
        "metrics": flat, "ties": ties, "counts": counts, "n_items": len(b.items),
        "seed": seed,
        "config": {"batch_size": batch_size, "device": str(device), "protocol": protocol,
                   "options": recorded},
        "timings": {"load_benchmark_s": t1 - t0, "load_model_s": t2 - t1, "score_s": t3 - t2,
                    "metrics_s": time.perf_counter() - t3},
        "versions": versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if out:
        out_path = Path(out)
        items_path = out_path.with_suffix(".items.jsonl")
        res["per_item"] = items_path.name
        atomic_write(items_path, "".join(json.dumps(r) + "\n" for r in per_item_records(b, scores, per_item)))
        write_json(out_path, res)
    if show:
        print_results(res)
        if out:
            print(f"results written to {out}")
    return res


def evaluate_retrieval(model: str, b: RetrievalSet, protocol: str, out: str | None, batch_size: int,
                       device: str, progress: bool, show: bool, t0: float) -> dict:
    """Recall@1/5/10 both ways from the global similarity matrix (retrieval is global-only)."""
    if protocol != "global":
        raise UnbagError(f"{b.name} is a retrieval set: only protocol 'global' scores every image "
                         "against every text; SGI and heads score candidate pairs")
    from .scoring.encode import encode_images, encode_texts

    backend = models.load(model, device=device)
    t1 = time.perf_counter()
    img = encode_images(backend, b.images, None, batch_size, b.image_size, progress)
    txt = encode_texts(backend, b.texts, progress=progress)
    flat = {f"all/retrieval/{k}": v for k, v in recall(img @ txt.T, b.image_texts).items()}
    res = {"model": model, "protocol": protocol, "benchmark": {"name": b.name, "spec": b.spec, **b.info},
           "metrics": flat, "ties": {}, "counts": {"all/retrieval": len(b.images)},
           "n_items": len(b.images), "config": {"batch_size": batch_size, "device": str(device),
                                                "protocol": protocol, "options": {}},
           "timings": {"load_s": t1 - t0, "score_s": time.perf_counter() - t1},
           "versions": versions(), "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if out:
        write_json(out, res)
    if show:
        for k, v in flat.items():
            print(f"{k:28s} {100 * v:6.1f}")
        if out:
            print(f"results written to {out}")
    return res
