"""ImageCoDe (Krojer et al., ACL 2022, arXiv 2203.15867) in its official layout (docs/benchmarks.md).

imagecode:DIR[:IMAGE_ROOT]   DIR is the repo's data/: valid_data.json, {set: {"<pos>": description}};
              the image sets unpacked as IMAGE_ROOT/<set>/img<X>.jpg (IMAGE_ROOT defaults to
              DIR/image-sets if it exists, else DIR), ten per set, the target the pos-th in order of
              the integer X. A set named without "open-images" is a video set.

Official rule (baselines/clip/zero_shot.py at 609f076): the image first in `(-similarities).argsort()`
is the prediction. On untied scores that is the best image; among tied best images the official
pick is not defined (numpy's default sort is not stable, and which tied index comes first depends
on numpy's version and the data), so no official tie rule exists. `acc_official` takes the first
of the tied maxima (a tie with an earlier image is wrong, with a later one right: one of the
official code's possible outcomes, and the one a stable sort gives); `acc` needs the target
strictly above the nine others. The two differ only on ties, which the results count.
"""
from __future__ import annotations

import re
from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Benchmark, Item
from .common import Dropped, folder_in, given_images, read_json, release_dir, unique_ids
from .kinds import Kind, Summary
from .shapes import choose, labels_of

_FRAME = re.compile(r"^img(\d+)\.(jpg|jpeg|png)$", re.I)


def metric(scores: torch.Tensor, items: list[Item]) -> dict[str, torch.Tensor]:
    """The target among the set's images, strict and first-of-the-maxima."""
    return choose(scores[:, :, 0], labels_of(items))


def load(root: str | Path, image_root: str | None = None) -> Benchmark:
    """ImageCoDe's validation descriptions."""
    given = Path(root)
    root = release_dir(given, ("valid_data.json",), ("data",))  # the repo's data/, or the repo
    images = given_images(image_root, "imagecode") or folder_in((root, given), "image-sets") or root
    f = root / "valid_data.json"
    data = read_json(f)
    if not isinstance(data, dict):
        raise UnbagError(f"{f}: expected {{set: {{position: description}}}}")
    dropped, items = Dropped(f"imagecode:{root}"), []
    for name, descs in data.items():
        where = f"{f}: set {name!r}"
        if not isinstance(descs, dict):
            raise UnbagError(f"{where}: expected {{position: description}}")
        subset = "static" if "open-images" in name else "video"
        folder = images / name
        frames = sorted((p for p in folder.iterdir() if _FRAME.match(p.name)), key=lambda p: int(_FRAME.match(p.name)[1])) \
            if folder.is_dir() else []
        for pos, text in descs.items():
            if not (isinstance(pos, str) and pos.isdigit()) or not isinstance(text, str) or not text.strip():
                raise UnbagError(f"{where}: entry {pos!r} must map a position 0-9 to a description")
            if int(pos) > 9:
                raise UnbagError(f"{where}: position {pos} is not one of the set's ten images (0-9)")
            if len(frames) != 10:
                dropped.add(subset, folder)  # the set's folder is absent or incomplete
                continue
            items.append(Item(f"{name}-{pos}", [str(p) for p in frames], [text.strip()], {"subset": subset},
                              meta={"label": int(pos)}, source=where))
    info = dropped.record({"notes": ["acc_official: the first of the best-scoring images; the official argsort "
                                     "leaves the pick among tied maxima undefined (numpy's default sort is not stable), "
                                     "so on ties it is one possible official outcome; acc: strict",
                                     "a set whose folder lacks its ten images is left out",
                                     "image sets read from IMAGE_ROOT/image-sets/<set>/ or IMAGE_ROOT/<set>/ (whether "
                                     "the archive has a top folder could not be checked)"]})
    return Benchmark("imagecode", f"imagecode:{root}", unique_ids(items, str(f)), info, metric=metric)


RELEASE = "github.com/McGill-NLP/imagecode (data/ and its image-sets archive)"  # where to download it
BENCHMARKS = {
    "imagecode": Kind("imagecode:DIR[:IMAGE_ROOT]", lambda path, root, seed: load(path, root), image_root=True,
                      suite="imagecode", release=RELEASE,
                      summary=Summary(("all/acc_official", "video/acc_official", "static/acc_official", "all/acc"),
                                      "all/acc_official")),
}
