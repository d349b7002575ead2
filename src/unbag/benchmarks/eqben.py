"""EqBen (Wang et al., ICCV 2023, arXiv 2303.14465) in its official layout (docs/benchmarks.md).

eqben:DIR[:IMAGE_ROOT]   DIR holds annotation/ann_json_finegrained_random.json (or the JSON
              directly): a list of {image, caption, private_info: {dataset, name: c0i0|c0i1|c1i0|c1i1,
              sample_cnt}} in random order, grouped by (dataset, sample_cnt) into 2x2 samples;
              images IMAGE_ROOT/<image> (IMAGE_ROOT defaults to DIR/image, then DIR/image_jpg; a
              missing .png is looked for as .jpg, as in the light release); YouCook2's .npy frames
              are BGR arrays.

Official rule (eqben_acc.py cal_wino_score): Winoground's text, image and group with strict `>`,
the same as unbag's (no `_official`), per subset (the image path's first folder).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, first_file, given_images, image_dir, need, need_text, read_json, unique_ids
from .kinds import Kind, Summary

ANNOTATION = "ann_json_finegrained_random.json"
NAMES = ("c0i0", "c0i1", "c1i0", "c1i1")


def _image(images: Path, rel: str) -> Path | None:
    p = images / rel
    return first_file(p, p.with_suffix(".jpg")) if p.suffix == ".png" else (p if p.is_file() else None)


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    """EqBen's samples, each 2 images x 2 captions."""
    root = Path(root)
    f = first_file(root / "annotation" / ANNOTATION, root / ANNOTATION)
    if f is None:
        raise UnbagError(f"{root}: annotation/{ANNOTATION} not found (see docs/benchmarks.md)")
    images = given_images(image_root, "eqben") or image_dir(root, "image", "image_jpg")
    data = read_json(f)
    if not isinstance(data, list):
        raise UnbagError(f"{f}: expected a list of records")
    samples: dict[tuple[str, int], dict[str, tuple[int, dict]]] = {}
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        need(ex, ("image", "caption", "private_info"), where)
        need_text(ex, ("caption",), where)
        info = ex["private_info"]
        need(info, ("dataset", "name", "sample_cnt"), f"{where}: field 'private_info'")
        if info["name"] not in NAMES:
            raise UnbagError(f"{where}: field 'private_info.name' is {info['name']!r}, not one of {', '.join(NAMES)}")
        cnt = info["sample_cnt"]
        if isinstance(cnt, str) and cnt.strip().isdigit():
            cnt = int(cnt)
        if not isinstance(cnt, int) or isinstance(cnt, bool):
            raise UnbagError(f"{where}: field 'private_info.sample_cnt' must be a whole number, got {cnt!r}")
        slot = samples.setdefault((str(info["dataset"]), cnt), {})
        if info["name"] in slot:
            raise UnbagError(f"{where}: duplicate {info['name']} of sample {info['sample_cnt']} in {info['dataset']} "
                             f"(also item {slot[info['name']][0]})")
        slot[info["name"]] = (n, ex)
    dropped, items = Dropped(f"eqben:{root}"), []
    for (subset, cnt), slot in sorted(samples.items()):
        where = f"{f}: sample {cnt} of {subset}"
        if len(slot) != 4:
            raise UnbagError(f"{where}: has {', '.join(sorted(slot))}; a sample needs all of {', '.join(NAMES)}")
        img = [slot[f"c0i{i}"][1]["image"] for i in (0, 1)]
        cap = [slot[f"c{c}i0"][1]["caption"] for c in (0, 1)]
        for c in (0, 1):
            for i in (0, 1):
                ex = slot[f"c{c}i{i}"][1]
                if ex["image"] != img[i] or ex["caption"] != cap[c]:
                    raise UnbagError(f"{f}: item {slot[f'c{c}i{i}'][0]}: c{c}i{i} must pair caption {c} "
                                     f"({cap[c]!r:.40}) with image {i} ({img[i]!r})")
        paths = [_image(images, p) for p in img]
        if dropped.present(subset, *paths):
            items.append(Item(f"{subset}-{cnt}", [str(p) for p in paths], cap, {"subset": subset}, source=where))
    info = dropped.record({"notes": [
        "text, image, group: strict '>', as eqben_acc.py cal_wino_score (no official tie rule differs)",
        "samples grouped by private_info (dataset, sample_cnt) and name c<caption>i<image>: the record format is read "
        "from the official local scorer and third-party readers, not from a published schema",
        "an annotated .png missing on disk is read as the light release's .jpg; .npy frames are BGR arrays"]})
    return Benchmark("eqben", f"eqben:{root}", unique_ids(items, str(f)), info)


RELEASE = "github.com/Wangt-CN/EqBen (annotation and image downloads in its README)"  # where to download it
BENCHMARKS = {
    "eqben": Kind("eqben:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                  suite="eqben", release=RELEASE, summary=Summary(("macro/group", "macro/text", "macro/image", "macro/groupmatch",
                                                                                  "*/group"),
                                                 "macro/group")),
}
