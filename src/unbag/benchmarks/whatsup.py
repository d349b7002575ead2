"""What'sUp (Kamath et al., EMNLP 2023, arXiv 2310.19785) in its official layout (docs/benchmarks.md).

whatsup:DIR   DIR is whatsup_vlms' `data/` folder:
              controlled_images_dataset.json (Controlled A), controlled_clevr_dataset.json (B): a list
              of {"image_path": "data/controlled_images/<o1>_<rel>_<o2>.jpeg", "caption_options": [4]},
              the true caption first; coco_qa_{one,two}_obj.json, vg_qa_{one,two}_obj.json: a list of
              [image_id, true caption, wrong caption], images DIR/val2017/<id:012>.jpg and
              DIR/vg_images/<id>.jpg.

Official rule (aro_datasets.py `evaluate_scores`): np.argmax over the options is 0, so a tie with
the true caption counts as right (`acc_official`); `acc` is strict. Controlled subsets add pair
accuracy (left/right and on/under, or in-front/behind, both right, over images/2) and set
accuracy (all four relations of an object pair right, over images/4). The paper's Table 1 columns
are means of subsets: What'sUp (A, B), COCO-spatial (COCO one, two), GQA-spatial (VG one, two).
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, missing_subsets, need, need_text, read_json, release_dir, unique_ids
from .kinds import Kind, Summary
from .shapes import first_caption

FILES = {"controlled_a": "controlled_images_dataset.json", "controlled_b": "controlled_clevr_dataset.json",
         "coco_qa_one": "coco_qa_one_obj.json", "coco_qa_two": "coco_qa_two_obj.json",
         "vg_qa_one": "vg_qa_one_obj.json", "vg_qa_two": "vg_qa_two_obj.json"}
CONTROLLED = ("controlled_a", "controlled_b")
PAIRS = {"controlled_a": (("left", "right"), ("on", "under")),
         "controlled_b": (("left", "right"), ("in-front", "behind"))}
GROUPS = {"whatsup": CONTROLLED, "coco_spatial": ("coco_qa_one", "coco_qa_two"),
          "gqa_spatial": ("vg_qa_one", "vg_qa_two")}


def _controlled(root: Path, subset: str, f: Path, data: list, dropped: Dropped) -> list[Item]:
    items = []
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        need(ex, ("image_path", "caption_options"), where)
        caps = ex["caption_options"]
        if not isinstance(caps, list) or len(caps) < 2:
            raise UnbagError(f"{where}: field 'caption_options' must list the true caption and its alternatives")
        need_text(dict(enumerate(caps)), tuple(range(len(caps))), f"{where}: field 'caption_options'")
        rel = Path(ex["image_path"])
        rel = Path(*rel.parts[1:]) if rel.parts and rel.parts[0] == "data" else rel  # paths start at the repo
        name = rel.name.rsplit(".", 1)[0].split("_")
        if len(name) < 3:
            raise UnbagError(f"{where}: field 'image_path' {ex['image_path']!r} is not <object>_<relation>_<object>")
        if not dropped.present(subset, root / rel):
            continue
        items.append(Item(f"{subset}-{n}", [str(root / rel)], list(caps), {"subset": subset},
                          meta={"pair": f"{name[0]}|{name[-1]}", "relation": name[1]}, source=where))
    return items


def _qa(root: Path, subset: str, f: Path, data: list, dropped: Dropped) -> list[Item]:
    folder, name = ("val2017", lambda i: f"{str(i).zfill(12)}.jpg") if subset.startswith("coco") else \
        ("vg_images", lambda i: f"{i}.jpg")
    items = []
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        if not isinstance(ex, list) or len(ex) != 3:
            raise UnbagError(f"{where}: expected [image_id, true caption, wrong caption], got {ex!r:.80}")
        if not isinstance(ex[0], (int, str)) or isinstance(ex[0], bool):
            raise UnbagError(f"{where}: field 0 (image_id) must be an int or a string, got {ex[0]!r}")
        need_text({"1": ex[1], "2": ex[2]}, ("1", "2"), where)
        path = root / folder / name(ex[0])
        if dropped.present(subset, path):
            items.append(Item(f"{subset}-{n}", [str(path)], [ex[1], ex[2]], {"subset": subset}, source=where))
    return items


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """Strict accuracy and the official argmax (a tie with the true, first caption is right)."""
    return first_caption(scores)


def breakdown(per_item: dict[str, torch.Tensor], items: list[Item]) -> dict[str, float]:
    """Pair and set accuracy of the controlled subsets (pooled under all/, their mean under
    macro/); the paper's Table 1 columns are `composed`."""
    out: dict[str, float] = {}
    for suffix in ("", "_official"):
        right = per_item[f"acc{suffix}"]
        pooled = {"pair_acc": [0, 0.0], "set_acc": [0, 0.0]}
        means = {"pair_acc": [], "set_acc": []}
        for subset in CONTROLLED:
            idx = [n for n, it in enumerate(items) if it.group["subset"] == subset]
            if not idx:
                continue
            by: dict[str, dict[str, bool]] = {}
            for n in idx:
                by.setdefault(items[n].meta["pair"], {})[items[n].meta["relation"]] = bool(right[n])
            pairs = sum(g.get(a, False) and g.get(b, False) for g in by.values() for a, b in PAIRS[subset])
            sets = sum(len(g) == 4 and all(g.values()) for g in by.values())
            for m, hits, per in (("pair_acc", pairs, 2), ("set_acc", sets, 4)):
                out[f"{subset}/{m}{suffix}"] = hits / (len(idx) / per)
                pooled[m][0] += len(idx) / per
                pooled[m][1] += hits
                means[m].append(out[f"{subset}/{m}{suffix}"])
        for m in means:
            if means[m]:
                out[f"all/{m}{suffix}"] = pooled[m][1] / pooled[m][0]
                out[f"macro/{m}{suffix}"] = sum(means[m]) / len(means[m])
    return out


def composed(subsets: set[str]) -> dict[str, dict[str, float]]:
    """The paper's three Table 1 columns, each the mean of its two subsets' accuracies (both
    rules), where both subsets are present."""
    return {f"group={group}/acc{suffix}": {f"{s}/acc{suffix}": 1 / len(members) for s in members}
            for suffix in ("", "_official") for group, members in GROUPS.items() if set(members) <= subsets}


def load(root: str | Path) -> Benchmark:
    """What'sUp from whatsup_vlms' data folder: every subset whose JSON is present."""
    root = release_dir(Path(root), tuple(FILES.values()), ("data",))  # the repo itself, or its data/
    wanted = {s: root / f for s, f in FILES.items()}
    gone = missing_subsets(f"whatsup:{root}", wanted)
    if len(gone) == len(wanted):
        raise UnbagError(f"{root}: none of {', '.join(FILES.values())} found (DIR is whatsup_vlms' data/ folder; "
                         "see docs/benchmarks.md)")
    dropped, items = Dropped(f"whatsup:{root}"), []
    for subset, f in wanted.items():
        if subset in gone:
            continue
        data = read_json(f)
        if not isinstance(data, list):
            raise UnbagError(f"{f}: expected a list of items")
        items += (_controlled if subset in CONTROLLED else _qa)(root, subset, f, data, dropped)
    info = dropped.record({"missing_subsets": gone, "notes": [
        "acc_official: np.argmax as in aro_datasets.py, a tie with the true (first) caption counts as right; "
        "acc: strict"]})
    return Benchmark("whatsup", f"whatsup:{root}", unique_ids(items, str(root)), info, metric=metric,
                     breakdown=breakdown, cluster="pair", composed=composed(set(wanted) - set(gone)))


RELEASE = "github.com/amitakamath/whatsup_vlms (data/ and its image download)"  # where to download it
BENCHMARKS = {
    "whatsup": Kind("whatsup:DIR", lambda path, root, seed: load(path), suite="whatsup", release=RELEASE,
                    summary=Summary(("group=whatsup/acc_official", "group=coco_spatial/acc_official",
                                     "group=gqa_spatial/acc_official", "group=*/acc", "macro/pair_acc_official",
                                     "macro/set_acc_official", "*/acc_official", "*/acc"),
                                    "group=whatsup/acc_official",
                                    suite=("group=whatsup/acc_official", "group=coco_spatial/acc_official",
                                           "group=gqa_spatial/acc_official"))),
}
