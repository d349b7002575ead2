"""Retrieval sets: images, texts and which texts describe which image.

`ctrl-retrieval` is unbag's general-ability proxy: plain captions of scenes of the world's
*pretraining* distribution (every combination: what general ability means for the built-in
model) from a seed no training run uses; identical caption texts are merged, so a
caption that fits several images counts as right for each of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..utils import read_text
from .base import ImageRef
from .kinds import RETRIEVAL, Kind

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


def _sample(job: tuple) -> tuple:
    """(image, caption) of stream sample k of a world (a 3D one renders on one torch thread, so
    the pixels are the same in a worker process or in this one)."""
    from ..world.styles import world
    style, seed, k, px, dist = job
    s = world(style).part("stream").sample(seed, k, px, dist)
    return s.image, s.caption


def ctrl_retrieval(n: int = 1000, seed: int = CTRL_RETRIEVAL_SEED, px: int | None = None,
                   dist: str = "pretraining", style: str | None = None) -> RetrievalSet:
    """n stream samples of one of a world's training distributions (None: the default world),
    with their captions, at px (None: the world's size)."""
    from ..world.styles import render_procs, world
    from ..world.worlds import ordered_map
    w = world(style)
    style, px = w.name, w.px if px is None else px
    jobs = [(style, seed, k, px, dist) for k in range(n)]
    procs = render_procs() if w.parallel and n >= 200 else 1
    images, texts, index, image_texts = [], [], {}, []
    samples = list(ordered_map(_sample, jobs, procs, chunksize=16))
    for image, caption in samples:
        images.append(image)
        if caption not in index:
            index[caption] = len(texts)
            texts.append(caption)
        image_texts.append([index[caption]])
    return RetrievalSet("ctrl-retrieval", f"ctrl-retrieval (seed {seed}, n {n})", images, texts, image_texts,
                        {"seed": seed, "n_images": n, "n_texts": len(texts), "distribution": dist,
                         "style": style, "render": w.render_version(px), "size": px}, px)


def karpathy(path: str, image_root: str | None = None, split: str = "test") -> RetrievalSet:
    """karpathy:FILE[:IMAGE_ROOT], whichever of the common layouts FILE is: Karpathy's
    dataset_*.json ({images: [{filepath, filename, split, sentences: [{raw}]}]}: the `split`
    images); CLIP_benchmark's COCO-style coco_*_karpathy.json ({images: [{id, file_name}],
    annotations: [{image_id, caption}]}); or its Flickr flickr30k_*_karpathy.txt (a header line,
    then `IMAGE.jpg,caption` lines). Images under IMAGE_ROOT, default FILE's folder (with
    CLIP_benchmark's val2014/ or Flickr's flickr30k-images/ when that holds them)."""
    from pathlib import Path

    from ..errors import UnbagError
    from .common import image_dir, need, read_json

    spec = f"{path}:{image_root}" if image_root else path
    path = Path(path)
    if not path.is_file():
        raise UnbagError(f"{path}: retrieval annotation file not found")
    if path.suffix == ".txt":
        pairs, layout, default = _flickr_txt(path), "CLIP_benchmark Flickr .txt", ("flickr30k-images",)
    else:
        data = read_json(path)
        if isinstance(data, dict) and "annotations" in data and "images" in data:
            pairs, layout, default = _coco_captions(data, path), "COCO captions (CLIP_benchmark)", ("val2014",)
        elif isinstance(data, dict) and "images" in data:
            pairs, layout, default = [], "Karpathy dataset_*.json", ()  # its entries name their folder
            for n, im in enumerate(data["images"]):
                need(im, ("filename", "sentences"), f"{path}: images[{n}]")
                if im.get("split", split) == split:
                    pairs.append((str(Path(im.get("filepath", "")) / im["filename"]), [s["raw"] for s in im["sentences"]]))
        else:
            raise UnbagError(f"{path}: neither Karpathy's {{\"images\": [...]}}, COCO's {{\"images\", "
                             "\"annotations\"}} nor a CLIP_benchmark .txt")
    root = Path(image_root) if image_root else image_dir(path.parent, *default)
    images, texts, image_texts = [], [], []
    for rel, caps in pairs:
        images.append(str(root / rel))
        image_texts.append(list(range(len(texts), len(texts) + len(caps))))
        texts += caps
    if not images:
        raise UnbagError(f"{path}: no images" + (f" in split {split!r}" if layout.startswith("Karpathy") else ""))
    return RetrievalSet("karpathy", f"karpathy:{spec}", images, texts, image_texts,
                        {"split": split, "layout": layout, "n_images": len(images), "n_texts": len(texts)})


def _coco_captions(data: dict, path) -> list[tuple[str, list[str]]]:
    """(file name, captions) of a COCO captions file, in its images' order (torchvision's CocoCaptions)."""
    from .common import need
    caps: dict = {}
    for n, a in enumerate(data["annotations"]):
        need(a, ("image_id", "caption"), f"{path}: annotations[{n}]")
        caps.setdefault(a["image_id"], []).append(a["caption"])
    out = []
    for n, im in enumerate(data["images"]):
        need(im, ("id", "file_name"), f"{path}: images[{n}]")
        out.append((im["file_name"], caps.get(im["id"], [])))
    return [(f, c) for f, c in out if c]


def _flickr_txt(path) -> list[tuple[str, list[str]]]:
    """CLIP_benchmark's Flickr annotations: a header, then IMAGE.jpg,caption lines (captions may hold commas)."""
    from ..errors import UnbagError
    caps: dict[str, list[str]] = {}
    for n, line in enumerate(read_text(path).splitlines()[1:], 2):
        if line.strip():
            image, sep, caption = line.strip().partition(".jpg,")
            if not sep or not caption.strip():
                raise UnbagError(f"{path}:{n}: expected IMAGE.jpg,caption")
            caps.setdefault(image + ".jpg", []).append(caption)
    return list(caps.items())


def load_wds_retrieval(root) -> RetrievalSet:
    """CLIP_benchmark's webdataset retrieval set: per sample an image and a .txt of captions."""
    from ..errors import UnbagError
    from .webdataset import wds_image, wds_samples
    images, texts, image_texts = [], [], []
    for shard, key, parts in wds_samples(root):
        where = f"{shard}: sample {key}"
        if "txt" not in parts:
            raise UnbagError(f"{where}: no .txt captions")
        caps = [c.strip() for c in parts["txt"].decode().splitlines() if c.strip()]
        if not caps:
            raise UnbagError(f"{where}.txt: no caption")
        images.append(wds_image(parts, where))
        image_texts.append(list(range(len(texts), len(texts) + len(caps))))
        texts += caps
    if not images:
        raise UnbagError(f"{root}/test: no samples")
    return RetrievalSet("wds", f"wds:{root}", images, texts, image_texts,
                        {"layout": "CLIP_benchmark webdataset", "n_images": len(images), "n_texts": len(texts)})


BENCHMARKS = {"karpathy": Kind("karpathy:FILE[:IMAGE_ROOT]", lambda path, third, seed: karpathy(path, third or None),
                               image_root=True, global_only=True, summary=RETRIEVAL)}
