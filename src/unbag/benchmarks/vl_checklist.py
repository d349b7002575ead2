"""VL-CheckList (Zhao et al. 2022, arXiv 2207.00221) in its official layout (docs/benchmarks.md).

vl-checklist:DIR[:IMAGE_ROOT]   DIR is the project root the README asks for: corpus/v1/<TYPE>/<corpus>.yaml
              ({ANNO_PATH, IMG_ROOT, TYPE}) and data/<...>.json, each a list of [image path,
              {"POS": [...], "NEG": [...]}]; images IMAGE_ROOT/<IMG_ROOT>/<path> (IMAGE_ROOT
              defaults to DIR). Records whose image is missing are dropped, as the official loader
              drops them, and counted.

vl-checklist-1k:DIR[:IMAGE_ROOT]   the same, each file cut to its first 1,000 items with an image,
              as the official ITC run (README's MAX_NUM 2000, halved in evaluate.py:98-99); the
              protocol `unbag suite` uses for the headline compared with published numbers.

Rule: an adaptation. The official evaluate.py (task itc, line 117; om-ai-lab/VL-CheckList at
6f8d6a3) compares the match probability an image-text-matching head gives POS[0] and NEG[0]; a dual
encoder has no such head, so unbag compares the similarities s(I, POS[0]) > s(I, NEG[0]), strict
(`acc`; no `_official`: the official number needs an ITM model). Subsets are the official output
names, TYPE with '/' -> '_' then '_<corpus>'. Categories follow radar.py: the mean over sources
(vg, vaw, swig, hake) of the mean of each source's files; Object, Attribute and Relation are the
means of their categories (declared as weighted means of the files, `Benchmark.composed`, so their
intervals are drawn like the others').
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError, warn
from ..utils import read_text
from .base import Benchmark, Item, Items
from .common import Dropped, images_at, kept_inside, read_json, unique_ids
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
        data = yaml.safe_load(read_text(path))
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


def composed(files: dict[str, tuple[str, str]]) -> dict[str, dict[str, float]]:
    """radar.py's categories (the mean over sources of the mean of each source's files present)
    and the three aspects (the means of their categories), with their mean, as weights on the
    files' accuracies and the categories'; `files`: each subset's (category, source)."""
    cats: dict[str, dict[str, list[str]]] = {}
    for f, (cat, src) in files.items():
        cats.setdefault(cat, {}).setdefault(src, []).append(f"{f}/acc")
    out: dict[str, dict[str, float]] = {}
    for cat, srcs in cats.items():
        out[f"category={cat}/acc"] = {k: 1 / len(srcs) / len(ks) for ks in srcs.values() for k in ks}
    aspects = []
    for aspect in ("Object", "Attribute", "Relation"):
        got = [f"category={c}/acc" for t, c in CATEGORY.items() if t.startswith(aspect) and f"category={c}/acc" in out]
        if got:
            out[f"aspect={aspect}/acc"] = {k: 1 / len(got) for k in got}
            aspects.append(f"aspect={aspect}/acc")
    if len(aspects) == 3:
        out["aspect=mean/acc"] = {k: 1 / 3 for k in aspects}
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
    dropped, items, missing, files = Dropped(f"vl-checklist:{root}"), Items(), [], {}
    for y in yamls:
        cfg = _yaml(y)
        kind = y.parent.relative_to(corpus).as_posix()
        subset = f"{kind.replace('/', '_')}_{y.stem}"
        f = kept_inside(root / cfg["ANNO_PATH"], [root], f"{y}: field 'ANNO_PATH'", "annotation file")
        if not f.is_file():
            missing.append(subset)
            continue
        data = read_json(f)
        if not isinstance(data, list):
            raise UnbagError(f"{f}: expected a list of [image path, {{POS, NEG}}]")
        category = CATEGORY.get(kind)
        if category is None:
            raise UnbagError(f"{y}: TYPE folder {kind!r} is not one of VL-CheckList's: {', '.join(CATEGORY)}")
        kept, group, meta = 0, {"subset": subset}, {"category": category, "source": y.stem.split("_")[0]}
        for n, ex in enumerate(data):  # one group and meta dict a file, shared by its items (never changed)
            if cap is not None and kept >= cap:
                break  # the official cut counts the records whose image exists (data_loader.py drops the others first)
            where = f"{f}: item {n}"
            if not (isinstance(ex, list) and len(ex) == 2 and isinstance(ex[0], str) and isinstance(ex[1], dict)):
                raise UnbagError(f"{where}: expected [image path, {{\"POS\": [...], \"NEG\": [...]}}]")
            for k in ("POS", "NEG"):
                v = ex[1].get(k)
                if not (isinstance(v, list) and v and isinstance(v[0], str) and v[0].strip()):
                    raise UnbagError(f"{where}: field '{k}' must list at least one non-empty caption")
            path = images / cfg["IMG_ROOT"] / ex[0]
            if dropped.present(subset, path):
                kept += 1
                items.append(Item(f"{subset}-{n}", [str(path)], [ex[1]["POS"][0], ex[1]["NEG"][0]],
                                  group, meta=meta, source=where))
                files[subset] = (category, meta["source"])
    if missing:
        warn(f"vl-checklist:{root}: {len(missing)} annotation file(s) named by corpus/ are missing, not scored: "
             + ", ".join(missing))
    info = dropped.record({"missing_subsets": missing, "item_cap": cap, "notes": [
        "acc: s(I, POS[0]) > s(I, NEG[0]), strict: an adaptation of the official ITC rule, which compares an "
        "image-text-matching head's match probabilities (evaluate.py:117)", "every item with an image is scored"
        if cap is None else f"each file cut to its first {cap} items with an image, as the official ITC run"]})
    name = "vl-checklist" if cap is None else "vl-checklist-1k"
    return Benchmark(name, f"{name}:{root}", unique_ids(items, str(root)), info, metric=metric,
                     composed=composed(files))


RELEASE = "github.com/om-ai-lab/VL-CheckList (data/); images: VG, SWiG, HAKE, VAW (its DATASETS.md)"  # where to download it
SUMMARY = Summary(("aspect=Object/acc", "aspect=Attribute/acc", "aspect=Relation/acc", "aspect=mean/acc", "category=*/acc",
                   "all/acc", "macro/acc"), ("aspect=mean/acc", "macro/acc"),
                  suite=("aspect=Object/acc", "aspect=Attribute/acc", "aspect=Relation/acc"))
BENCHMARKS = {
    # the official ITC run's items: the suite's headline (comparable with published numbers)
    "vl-checklist-1k": Kind("vl-checklist-1k:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root, OFFICIAL_CAP),
                            image_root=True, suite="vl-checklist", release=RELEASE, summary=SUMMARY),
    # every item: beside it in the suite when asked (`unbag suite --all-items`), never averaged
    "vl-checklist": Kind("vl-checklist:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                         suite="vl-checklist", suite_extra=True, release=RELEASE, summary=SUMMARY),
}
