"""`unbag compare A.json B.json [--metric KEY]`: two results on the same items, compared item by item.

It refuses results on different items (benchmark name, generator stamp or files fingerprint, item
ids) and gives, for one metric key: both values with their intervals, the difference A - B with
its paired-bootstrap 95% interval (each resample draws the same items for both), an exact McNemar
p-value where the per-item metric is right/wrong, and the items each gets right that the other
misses (docs/results.md, "Comparing two results").
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

from ..errors import UnbagError
from ..metrics import aggregate, summarize
from ..metrics.intervals import RESAMPLES, SEED, Part, bootstrap_values, percentile
from ..utils import items_hash, opened, read_json

# what a results file records of its items that must agree for a comparison (besides the ids)
SAME = ("name", "seed", "per_category", "size", "render", "style", "files", "split", "n_images")


def mcnemar(b: int, c: int) -> float:
    """The exact (binomial) McNemar p-value, two-sided: b and c the discordant pairs (A right and B
    wrong, A wrong and B right); 1.0 when there are none."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def _load(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """A results file and its per-item records (checked against the hash it records)."""
    path = Path(os.path.expanduser(path))
    res = read_json(path)
    if not isinstance(res, dict) or "metrics" not in res:
        raise UnbagError(f"{path}: not a results file of unbag eval")
    name = res.get("per_item")
    if not name:
        raise UnbagError(f"{path}: no per-item file (retrieval and zero-shot results hold none); compare needs "
                         "the per-item results of an item benchmark")
    if not isinstance(name, str) or Path(name).name != name or name in (".", "..") or not name.endswith(".items.jsonl"):
        raise UnbagError(f"{path}: field 'per_item' must name the .items.jsonl file unbag wrote beside it, got "
                         f"{name!r}; compare reads nothing else")
    if not isinstance(res.get("per_item_sha256"), str):
        raise UnbagError(f"{path}: field 'per_item_sha256' is missing: the per-item file cannot be checked against it")
    bad = [k for k, v in res["metrics"].items() if not isinstance(v, (int, float)) or isinstance(v, bool)
           or not math.isfinite(v)]
    if bad:
        raise UnbagError(f"{path}: metrics['{bad[0]}'] is {res['metrics'][bad[0]]!r}, not a finite number")
    items_file = path.parent / name
    if not items_file.is_file():
        raise UnbagError(f"{path}: its per-item file {items_file} is missing")
    data = opened(items_file).read_bytes()
    if items_hash(data) != res["per_item_sha256"]:
        raise UnbagError(f"{items_file}: changed since {path} was written (per_item_sha256 differs)")
    return res, [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def _same_items(a: tuple[str, dict, list], b: tuple[str, dict, list]) -> None:
    (pa, ra, ia), (pb, rb, ib) = a, b
    for k in SAME:
        va, vb = ra["benchmark"].get(k), rb["benchmark"].get(k)
        if va != vb and k == "files":
            raise UnbagError(f"{pa} and {pb} read different files (benchmark.files {str(va)[:12]}... and "
                             f"{str(vb)[:12]}...): another copy or version of the release, at another path or with "
                             "other file times, may hold other pictures; score both on one copy to compare them")
        if va != vb:
            raise UnbagError(f"{pa} and {pb} are not results on the same items: benchmark.{k} is {va!r} and {vb!r}")
    if ra.get("composed") != rb.get("composed"):
        raise UnbagError(f"{pa} and {pb} are not results on the same items: they compose their averages from other "
                         "subsets (field 'composed')")
    ids_a, ids_b = [r["id"] for r in ia], [r["id"] for r in ib]
    if ids_a != ids_b:
        only = sorted(set(ids_a) ^ set(ids_b))
        raise UnbagError(f"{pa} and {pb} are not results on the same items: "
                         + (f"{len(only)} item(s) in one only, e.g. {only[0]!r}" if only else "the items are in another order"))


def _values(records: list[dict]) -> tuple[dict[str, torch.Tensor], list[dict]]:
    """Per-item metric tensors (NaN where a metric does not apply) and each item's groups."""
    names = sorted({k for r in records for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    per_item = {m: torch.tensor([float(r.get(m, math.nan)) for r in records]) for m in names}
    per_item |= {f"tie/{m}": torch.tensor([m in r.get("ties", ()) for r in records]) for m in names}
    groups = [{k: v for k, v in r.items() if isinstance(v, str) and k != "id"} for r in records]
    return per_item, groups


def _parts(per_item: dict, groups: list[dict], composed: dict | None = None) -> tuple[dict, dict[str, Part]]:
    """The metrics recomputed from per-item values, and how each was made; `composed`: the keys a
    results file records as weighted means of others (What'sUp's Table 1 columns)."""
    names = tuple(m for m in per_item if not m.startswith("tie/"))
    parts: dict[str, Part] = {}
    if all("split" in g and "category" in g for g in groups):
        flat = aggregate(per_item, groups, names, parts)[0]
    else:
        flat = summarize(per_item, [g.get("subset", "all") for g in groups], names, parts=parts)[0]
    for key, of in (composed or {}).items():
        if isinstance(of, dict) and of and all(k in flat for k in of):
            flat[key] = sum(w * flat[k] for k, w in of.items())
            parts[key] = Part("macro", of=tuple(of), weights=tuple(of.values()))
    return flat, parts


def _paired(a: str | os.PathLike, b: str | os.PathLike) -> tuple:
    """Two results files checked to be on the same items: (results A, records A, results B, per-item
    values A and B, metrics recomputed A and B, how each key was made)."""
    ra, ia = _load(a)
    rb, ib = _load(b)
    _same_items((str(a), ra, ia), (str(b), rb, ib))
    va, groups = _values(ia)
    vb, _ = _values(ib)
    fa, parts = _parts(va, groups, ra.get("composed"))
    fb, _ = _parts(vb, groups, ra.get("composed"))
    return ra, ia, rb, va, vb, fa, fb, parts


def default_key(res: dict) -> str:
    """The metric a comparison is of by default: the benchmark's headline (ctrl: all/all/group)."""
    from ..benchmarks import summary

    s = summary(res["benchmark"]["name"])
    key = s.headline(res["metrics"])
    if key is None and s.grid is not None:
        key = f"all/all/{s.grid.metric}"
    if key is None or key not in res["metrics"]:
        raise UnbagError("name the metric to compare with --metric KEY (one of the results' metrics keys)")
    return key


def compare(a: str | os.PathLike, b: str | os.PathLike, metric: str | None = None, resamples: int = RESAMPLES,
            seed: int = SEED) -> dict:
    """The paired comparison of two results files on the same items (module docstring)."""
    ra, ia, rb, va, vb, fa, fb, parts = _paired(a, b)
    key = metric or default_key(ra)
    if key not in parts:
        known = ", ".join(sorted(parts)[:12])
        raise UnbagError(f"--metric {key!r}: not a metric compare can recompute from the per-item files "
                         f"(a bucket mean or a macro average: {known}, ...)")
    for path, res, got in ((a, ra, fa), (b, rb, fb)):
        if key in res["metrics"] and abs(res["metrics"][key] - got[key]) > 1e-6:
            raise UnbagError(f"{path}: metrics[{key!r}] is {res['metrics'][key]} but its per-item file gives {got[key]}")
    diff = _paired_draws(va, vb, parts, key, len(ia), resamples, seed)
    out = {"metric": key, "a": {"file": str(a), "model": ra["model"], "protocol": ra["protocol"], "value": fa[key],
                                "interval": ra.get("intervals", {}).get(key)},
           "b": {"file": str(b), "model": rb["model"], "protocol": rb["protocol"], "value": fb[key],
                 "interval": rb.get("intervals", {}).get(key)},
           "difference": fa[key] - fb[key], "difference_interval": [round(x, 6) for x in percentile(diff)],
           "interval": {"method": "paired bootstrap", "resamples": resamples, "seed": seed}}
    p = parts[key]
    if p.kind == "mean":
        idx = list(p.items)
        xa, xb = va[p.metric][idx], vb[p.metric][idx]
        keep = ~(xa.isnan() | xb.isnan())
        ids = [ia[i]["id"] for i in idx]
        binary = bool((((xa == 0) | (xa == 1)) & ((xb == 0) | (xb == 1)))[keep].all())
        if binary:
            only_a = [ids[j] for j in range(len(idx)) if keep[j] and xa[j] == 1 and xb[j] == 0]
            only_b = [ids[j] for j in range(len(idx)) if keep[j] and xa[j] == 0 and xb[j] == 1]
            out |= {"mcnemar_p": mcnemar(len(only_a), len(only_b)), "only_a": only_a, "only_b": only_b}
    return out


def paired_mean_difference(a: str | os.PathLike, b: str | os.PathLike, keys: list[str], resamples: int = RESAMPLES,
                           seed: int = SEED) -> tuple[float, list[float]]:
    """A - B of the mean of some metric keys (a grid's OOD average) over the same items, and its 95%
    paired-bootstrap interval."""
    _, ia, _, va, vb, fa, fb, parts = _paired(a, b)
    missing = [k for k in keys if k not in parts]
    if missing:
        raise UnbagError(f"{a}: cannot recompute {', '.join(missing)} from its per-item file")
    parts = {**parts, "mean": Part("macro", of=tuple(keys))}
    diff = _paired_draws(va, vb, parts, "mean", len(ia), resamples, seed)
    point = sum(fa[k] for k in keys) / len(keys) - sum(fb[k] for k in keys) / len(keys)
    return point, [round(x, 6) for x in percentile(diff)]


def _paired_draws(va: dict, vb: dict, parts: dict, key: str, n: int, resamples: int, seed: int) -> torch.Tensor:
    """A - B of `key` on each resample of the same items (one seed: the same draws for both)."""
    return (bootstrap_values(va, parts, [key], n, resamples=resamples, seed=seed)[key]
            - bootstrap_values(vb, parts, [key], n, resamples=resamples, seed=seed)[key])


def print_comparison(c: dict, show: int = 10) -> None:
    """The comparison on the terminal."""
    def side(s: dict) -> str:
        iv = s["interval"]
        return f"{100 * s['value']:.1f}" + (f" [{100 * iv[0]:.1f}, {100 * iv[1]:.1f}]" if iv else "")

    lo, hi = c["difference_interval"]
    print(f"{c['metric']}:")
    print(f"  A {c['a']['model']} · {c['a']['protocol']}: {side(c['a'])}")
    print(f"  B {c['b']['model']} · {c['b']['protocol']}: {side(c['b'])}")
    held = lo <= 0 <= hi
    print(f"  A - B = {100 * c['difference']:+.1f} points, 95% paired-bootstrap interval [{100 * lo:+.1f}, {100 * hi:+.1f}]"
          + (" (holds 0: not separable)" if held else ""))
    if "mcnemar_p" in c:
        print(f"  exact McNemar p = {c['mcnemar_p']:.3g} ({len(c['only_a'])} items right only in A, "
              f"{len(c['only_b'])} only in B)")
        for name, ids in (("A", c["only_a"]), ("B", c["only_b"])):
            if ids:
                print(f"  right only in {name}: {', '.join(ids[:show])}" + (f", ... ({len(ids)})" if len(ids) > show else ""))
