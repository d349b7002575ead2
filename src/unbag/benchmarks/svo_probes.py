"""SVO-Probes (Hendricks & Nematzadeh, Findings ACL 2021, arXiv 2106.09141) in its official layout
(docs/benchmarks.md).

svo-probes:DIR[:IMAGE_ROOT]   DIR holds svo_probes.csv (sentence, pos_triplet, neg_triplet,
              subj_neg, verb_neg, obj_neg, pos_url, neg_url, pos_image_id, neg_image_id); the images,
              fetched from their urls, are IMAGE_ROOT/<image id>.<jpg|jpeg|png> (IMAGE_ROOT defaults
              to DIR/images). Many urls are dead: rows whose images are missing are left out and counted.

The official notebook scores 0/1 match decisions, which a dual encoder does not make; unbag scores
the pairwise adaptation, s(sentence, positive image) > s(sentence, negative image), strict (`pair`).
Subsets: the rows whose negative differs in exactly the subject, the verb or the object.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, csv_records, first_file, given_images, unique_ids
from .kinds import Kind, Summary
from .shapes import choose

FLAGS = ("subj_neg", "verb_neg", "obj_neg")


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """The positive image (first) above the negative for the sentence, strict."""
    return choose(scores[:, :, 0], torch.zeros(len(scores), dtype=torch.long), "pair", official=False)


def _flag(v: str, where: str) -> bool:
    if v.strip() in ("True", "true", "1"):
        return True
    if v.strip() in ("False", "false", "0"):
        return False
    raise UnbagError(f"{where}: expected True or False, got {v!r}")


def _image(images: Path, image_id: str) -> Path | None:
    return first_file(*(images / f"{image_id}{ext}" for ext in (".jpg", ".jpeg", ".png")))


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    """SVO-Probes' rows with one negated part whose two images are present."""
    root = Path(root)
    f = root / "svo_probes.csv"
    if not f.is_file():
        raise UnbagError(f"{f}: file not found (see docs/benchmarks.md for the expected layout)")
    images = given_images(image_root, "svo-probes") or root / "images"
    dropped, items, excluded = Dropped(f"svo-probes:{root}"), [], 0
    need = ("sentence", "pos_image_id", "neg_image_id", *FLAGS)
    for line, row in csv_records(f, need):
        where = f"{f}:{line}"
        flags = [_flag(row[c], f"{where}: field '{c}'") for c in FLAGS]
        if sum(flags) != 1:
            excluded += 1
            continue
        if not row["sentence"].strip():
            raise UnbagError(f"{where}: field 'sentence' is empty")
        ids = [row["pos_image_id"].strip(), row["neg_image_id"].strip()]
        if not all(ids):
            raise UnbagError(f"{where}: fields pos_image_id and neg_image_id must name images")
        subset = FLAGS[flags.index(True)].split("_")[0]
        paths = [_image(images, i) for i in ids]
        if dropped.present(subset, *paths):
            key = row.get("index") or row.get("") or str(line)
            items.append(Item(f"svo-{key}", [str(p) for p in paths], [row["sentence"]], {"subset": subset},
                              source=where))
    info = dropped.record({"excluded_multi": excluded, "notes": [
        "pair: s(sentence, positive image) > s(sentence, negative image), strict; the official notebook scores 0/1 "
        "match decisions, which a dual encoder does not make", "rows negating more or fewer than one part are "
        "excluded (excluded_multi)"]})
    return Benchmark("svo-probes", f"svo-probes:{root}", unique_ids(items, str(f)), info, metric=metric)


RELEASE = "github.com/google-deepmind/svo_probes (svo_probes.csv; images from its urls)"  # where to download it
BENCHMARKS = {
    "svo-probes": Kind("svo-probes:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                      suite="svo-probes", release=RELEASE,
                       summary=Summary(("macro/pair", "all/pair", "*/pair"), "macro/pair")),
}
