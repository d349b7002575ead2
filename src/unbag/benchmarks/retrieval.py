"""Retrieval sets: images, texts and which texts describe which image.

`ctrl-retrieval` is unbag's general-ability proxy: plain captions of scenes of the world's
*pretraining* distribution (every combination: what general ability means for the built-in
model) from a seed no training run uses; identical caption texts are merged, so a
caption that fits several images counts as right for each of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field


from .base import ImageRef

CTRL_RETRIEVAL_SEED = 7777


@dataclass
class RetrievalSet:
    name: str
    spec: str
    images: list[ImageRef]
    texts: list[str]
    image_texts: list[list[int]]  # for each image, the indices of the texts that describe it
    info: dict = field(default_factory=dict)
    image_size: int | None = None


def ctrl_retrieval(n: int = 1000, seed: int = CTRL_RETRIEVAL_SEED, px: int = 64,
                   dist: str = "pretraining") -> RetrievalSet:
    """n stream samples of one of the world's training distributions, with their captions."""
    from ..world import stream
    from ..world.render import RENDER_VERSION

    images, texts, index, image_texts = [], [], {}, []
    for k in range(n):
        s = stream.sample(seed, k, px, dist)
        images.append(s.image)
        if s.caption not in index:
            index[s.caption] = len(texts)
            texts.append(s.caption)
        image_texts.append([index[s.caption]])
    return RetrievalSet("ctrl-retrieval", f"ctrl-retrieval (seed {seed}, n {n})", images, texts, image_texts,
                        {"seed": seed, "n_images": n, "n_texts": len(texts), "distribution": dist,
                         "render": RENDER_VERSION}, px)


def karpathy(path: str, image_root: str | None = None, split: str = "test") -> RetrievalSet:
    """karpathy:JSON[:IMAGE_ROOT]: Karpathy's dataset_*.json ({images: [{filepath, filename, split,
    sentences: [{raw}]}]}); images under IMAGE_ROOT (default: the JSON's folder)."""
    from pathlib import Path

    from ..errors import UnbagError
    from .common import need, read_json

    spec = f"{path}:{image_root}" if image_root else path
    path = Path(path)
    root = Path(image_root) if image_root else path.parent
    data = read_json(path)
    if not isinstance(data, dict) or "images" not in data:
        raise UnbagError(f"{path}: expected Karpathy's layout {{\"images\": [...]}}")
    images, texts, image_texts = [], [], []
    for n, im in enumerate(data["images"]):
        need(im, ("filename", "sentences"), f"{path}: images[{n}]")
        if im.get("split", split) != split:
            continue
        images.append(str(root / im.get("filepath", "") / im["filename"]))
        first = len(texts)
        texts += [s["raw"] for s in im["sentences"]]
        image_texts.append(list(range(first, len(texts))))
    if not images:
        raise UnbagError(f"{path}: no images in split {split!r}")
    return RetrievalSet("karpathy", f"karpathy:{spec}", images, texts, image_texts,
                        {"split": split, "n_images": len(images), "n_texts": len(texts)})
