"""VL-CheckList (Zhao et al. 2022, arXiv 2207.00221) in its official layout (docs/benchmarks.md).

vl-checklist:DIR[:IMAGE_ROOT]   DIR is the project root the README asks for: corpus/v1/<TYPE>/<corpus>.yaml
              ({ANNO_PATH, IMG_ROOT, TYPE}) and data/<...>.json, each a list of [image path,
              {"POS": [...], "NEG": [...]}]; images IMAGE_ROOT/<IMG_ROOT>/<path> (IMAGE_ROOT
              defaults to DIR). Records whose image is missing are dropped, as the official loader
              drops them, and counted.

Official rule (vl_checklist/evaluate.py, task itc): POS[0] scores strictly above NEG[0] (a tie is
wrong, as unbag's rule; no `_official`). Subsets are the official output names, TYPE with '/' ->
'_' then '_<corpus>'. Categories follow radar.py: the mean over sources (vg, vaw, swig, hake) of the
mean of each source's files; Object, Attribute and Relation are the means of their categories.
The official run cuts each file to its first 1000 items (`cap=1000`); unbag scores them all by default.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError, warn
from .base import Benchmark, Item
from .common import Dropped, images_at, read_json, unique_ids
from .kinds import Kind, Summary
from .shapes import first_caption

# radar.py's 13 categories by the TYPE folder of a file
CATEGORY = {"Object/Size/large": "large", "Object/Size/medium": "medium", "Object/Size/small": "small",
            "Object/Location/center": "center", "Object/Location/mid": "mid", "Object/Location/margin": "margin",
            "Attribute/color": "color", "Attribute/material": "material", "Attribute/action": "action_a",
            "Attribute/size": "size", "Attribute/state": "state", "Relation/action": "action_r",
            "Relation/spatial": "spatial"}
OFFICIAL_CAP = 1000  # configs/sample.yaml MAX_NUM 2000, halved by evaluate.py


def _yaml(path: Path) -> dict:
    import yaml
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise UnbagError(f"{path}: not a readable YAML file ({e})") from None
    if not isinstance(data, dict):
        raise UnbagError(f"{path}: expected the keys ANNO_PATH, IMG_ROOT and TYPE")
    for k in ("ANNO_PATH", "IMG_ROOT"):
        if not isinstance(data.get(k), str):
            raise UnbagError(f"{path}: field '{k}' must be a string")
    return data


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """POS[0] strictly above NEG[0] (the official rule is strict too)."""
    return first_caption(scores, official=False)


def breakdown(per_item: dict[str, torch.Tensor], items: list[Item]) -> dict[str, float]:
    """radar.py's categories (source-then-file means over the files present) and the three aspects."""
    files: dict[str, list[int]] = {}
    for n, it in enumerate(items):
        files.setdefault(it.group["subset"], []).append(n)
    acc = {f: float(per_item["acc"][idx].mean()) for f, idx in files.items()}
    cats: dict[str, dict[str, list[float]]] = {}
    for f, idx in files.items():
        meta = items[idx[0]].meta
        cats.setdefault(meta["category"], {}).setdefault(meta["source"], []).append(acc[f])
    out = {f"category={c}/acc": sum(sum(v) / len(v) for v in src.values()) / len(src) for c, src in cats.items()}
    aspects = {}
    for aspect in ("Object", "Attribute", "Relation"):
        got = [out[f"category={c}/acc"] for t, c in CATEGORY.items() if t.startswith(aspect) and f"category={c}/acc" in out]
        if got:
            aspects[aspect] = out[f"aspect={aspect}/acc"] = sum(got) / len(got)
    if len(aspects) == 3:
        out["aspect=mean/acc"] = sum(aspects.values()) / 3
    return out


def load(root: str | Path, image_root: str | None = None, cap: int | None = None) -> Benchmark:
    """VL-CheckList from the project root; `cap`: only the first `cap` items of each file (the
    official run's 1000), recorded."""
    root = Path(root)
    images = images_at(root, image_root) if image_root else root
    corpus = root / "corpus" / "v1"
    yamls = sorted(corpus.rglob("*.yaml")) if corpus.is_dir() else []
    if not yamls:
        raise UnbagError(f"{root}: no corpus/v1/**/*.yaml found (DIR is the project root holding corpus/ and data/; "
                         "see docs/benchmarks.md)")
    dropped, items, missing = Dropped(f"vl-checklist:{root}"), [], []
    for y in yamls:
        cfg = _yaml(y)
        kind = y.parent.relative_to(corpus).as_posix()
        subset = f"{kind.replace('/', '_')}_{y.stem}"
        f = root / cfg["ANNO_PATH"]
        if not f.is_file():
            missing.append(subset)
            continue
        data = read_json(f)
        if not isinstance(data, list):
            raise UnbagError(f"{f}: expected a list of [image path, {{POS, NEG}}]")
        category = CATEGORY.get(kind)
        if category is None:
            raise UnbagError(f"{y}: TYPE folder {kind!r} is not one of VL-CheckList's: {', '.join(CATEGORY)}")
        for n, ex in enumerate(data[:cap] if cap else data):
            where = f"{f}: item {n}"
            if not (isinstance(ex, list) and len(ex) == 2 and isinstance(ex[0], str) and isinstance(ex[1], dict)):
                raise UnbagError(f"{where}: expected [image path, {{\"POS\": [...], \"NEG\": [...]}}]")
            for k in ("POS", "NEG"):
                v = ex[1].get(k)
                if not (isinstance(v, list) and v and isinstance(v[0], str) and v[0].strip()):
                    raise UnbagError(f"{where}: field '{k}' must list at least one non-empty caption")
            path = images / cfg["IMG_ROOT"] / ex[0]
            if dropped.present(subset, path):
                items.append(Item(f"{subset}-{n}", [str(path)], [ex[1]["POS"][0], ex[1]["NEG"][0]],
                                  {"subset": subset}, meta={"category": category, "source": y.stem.split("_")[0]},
                                  source=where))
    if missing:
        warn(f"vl-checklist:{root}: {len(missing)} annotation file(s) named by corpus/ are missing, not scored: "
             + ", ".join(missing))
    if not items:
        raise UnbagError(f"{root}: no item could be read (annotation files or images missing)")
    info = dropped.record({"missing_subsets": missing, "item_cap": cap, "notes": [
        "acc: POS[0] > NEG[0], strict, as the official evaluate.py; every item is scored unless item_cap is set "
        f"(the official run: the first {OFFICIAL_CAP} of each file)"]})
    return Benchmark("vl-checklist", f"vl-checklist:{root}", unique_ids(items, str(root)), info, metric=metric,
                     breakdown=breakdown)


RELEASE = "github.com/om-ai-lab/VL-CheckList (data/); images: VG, SWiG, HAKE, VAW (its DATASETS.md)"  # where to download it
BENCHMARKS = {
    "vl-checklist": Kind("vl-checklist:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                      suite="vl-checklist", release=RELEASE,
                         summary=Summary(("aspect=Object/acc", "aspect=Attribute/acc", "aspect=Relation/acc",
                                          "aspect=mean/acc", "category=*/acc", "all/acc", "macro/acc"),
                                         ("aspect=mean/acc", "macro/acc"),
                                         suite=("aspect=Object/acc", "aspect=Attribute/acc", "aspect=Relation/acc"))),
}
