"""Image regions for SGI: where they come from, and how one becomes an encoder input.

A region is a tuple of boxes (x0, y0, x1, y1) in pixels, end exclusive: one box for a single
region, several for a group (the union of its members' boxes, not their bounding box, so an
object lying between two members stays hidden).

Sources: `gt` (boxes shipped with a benchmark), `grid` (multi-scale sliding windows with
overlap, full image included), `selective` (hierarchical grouping of graph-based segments in the
manner of selective search, Uijlings et al. 2013: the photo benchmarks' default, full image
included), `proposals` (one flat Felzenszwalb segmentation), `blobs` (connected components that
differ from the background colour: fast, for scenes on a plain background such as ctrl),
`chroma` (for CLEVR-style 3D scenes on a grey floor with shadows: one connected component per
palette colour, grey objects by their brightness against the floor's; docs/world3d.md), each
optionally `+groups` (unions of 2..max_group regions, for counts and relations). docs/sgi.md
compares them on hand-labelled boxes.
Inputs: `mask` keeps the region in place and fills the rest with the image's background colour
(keeps absolute size and position); `crop` cuts the bounding box out and resizes it to the model
input, as in the paper (loses absolute size).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import UnbagError

Box = tuple[int, int, int, int]
Region = tuple[Box, ...]

MODES = ("mask", "tokens", "crop")  # tokens: a ViT encodes only the patches a region covers


@dataclass(frozen=True)
class RegionConfig:
    """How SGI finds regions and turns them into encoder inputs."""
    source: str = "blobs"
    groups: bool = True
    max_group: int = 4  # largest union size
    max_group_base: int = 6  # no unions when an image has more base regions than this
    mode: str = "mask"
    scales: tuple[float, ...] = (0.5, 1 / 3)  # grid window side as a fraction of the image side
    overlap: float = 0.5
    full: bool | None = None  # include the whole image; default: for `grid` and `selective`
    pad: int = 1  # pixels added around proposal boxes
    k: int = 8  # most boxes `selective` keeps

    @classmethod
    def parse(cls, spec: str, mode: str = "mask", **kw) -> "RegionConfig":
        """'proposals+groups', 'gt', 'grid' ... -> RegionConfig."""
        parts = spec.split("+")
        source, rest = parts[0], parts[1:]
        if source not in REGION_SOURCES or any(r != "groups" for r in rest):
            raise UnbagError(f"unknown region source {spec!r}; use one of {', '.join(REGION_SOURCES)}, "
                             "optionally with '+groups'")
        if mode not in MODES:
            raise UnbagError(f"unknown region mode {mode!r}; use one of {', '.join(MODES)}")
        return cls(source=source, groups="groups" in rest, mode=mode, **kw)

    @property
    def name(self) -> str:
        return self.source + ("+groups" if self.groups else "") + f"/{self.mode}"


def grid_boxes(w: int, h: int, scales: tuple[float, ...], overlap: float) -> list[Box]:
    """Sliding square-ish windows at each scale, stride = window * (1 - overlap), edges covered."""
    out: list[Box] = []
    for s in scales:
        bw, bh = max(1, round(w * s)), max(1, round(h * s))
        xs = _starts(w, bw, max(1, bw * (1 - overlap)))
        ys = _starts(h, bh, max(1, bh * (1 - overlap)))
        out += [(x, y, x + bw, y + bh) for y in ys for x in xs]
    return list(dict.fromkeys(out))


def _starts(side: int, win: int, stride: float) -> list[int]:
    """Evenly spaced window starts from 0 to side - win, about `stride` apart."""
    n = max(1, round((side - win) / stride) + 1)
    return sorted({int(round(v)) for v in np.linspace(0, side - win, n)})


FRAMES = ("pad", "crop")


def framed(img: np.ndarray, frame: str, gt: list | None = None) -> tuple[np.ndarray, list | None]:
    """The square picture SGI takes regions from, and the benchmark's boxes moved into it.

    The encoder's preprocessing centre-crops a non-square image, so a region masked in the full
    frame would lose whatever lies outside that crop. `pad` (the default) pads the image to a
    square with its background colour: nothing is lost. `crop` takes the square the encoder sees:
    regions cover what global scoring sees."""
    h, w = img.shape[:2]
    if h == w:
        return img, gt
    side = max(h, w) if frame == "pad" else min(h, w)
    dx, dy = (side - w) // 2, (side - h) // 2  # offsets of the image in the square (negative: cut)
    if frame == "pad":
        out = np.empty((side, side, 3), dtype=img.dtype)
        out[:] = background_color(img)
        out[dy:dy + h, dx:dx + w] = img
    else:
        out = np.ascontiguousarray(img[-dy:-dy + side, -dx:-dx + side])
    if gt is not None:
        moved = [[min(max(b[0] + dx, 0), side), min(max(b[1] + dy, 0), side),
                  min(max(b[2] + dx, 0), side), min(max(b[3] + dy, 0), side)] for b in gt]
        gt = [b for b in moved if b[2] > b[0] and b[3] > b[1]]
    return out, gt


def background_color(img: np.ndarray) -> np.ndarray:
    """Per-channel median: the background colour when the background covers most of the image."""
    return np.median(img.reshape(-1, 3), axis=0).astype(np.uint8)


FILLS = ("median", "rows")


def row_fill(img: np.ndarray) -> np.ndarray:
    """Each row's per-channel median along the row [H, W, 3]: the floor of a scene seen in
    perspective (its shade changes with the row), when objects cover less than half of each row."""
    return np.ascontiguousarray(np.broadcast_to(np.median(img, axis=1, keepdims=True).astype(np.uint8), img.shape))


def _segment_boxes(labels: np.ndarray, keep, pad: int, min_area: float) -> list[list[int]]:
    from scipy import ndimage

    h, w = labels.shape
    counts = np.bincount(labels.ravel())
    boxes = []
    for i, sl in enumerate(ndimage.find_objects(labels + 1)):
        if sl is None or counts[i] < min_area or not keep(i, counts[i]):
            continue
        boxes.append([max(0, sl[1].start - pad), max(0, sl[0].start - pad),
                      min(w, sl[1].stop + pad), min(h, sl[0].stop + pad)])
    return boxes


def proposal_boxes(img: np.ndarray, pad: int = 1, min_area_frac: float = 0.004,
                   min_contrast: float = 25.0) -> list[Box]:
    """Class-agnostic object boxes: Felzenszwalb graph segmentation; segments as large as a floor
    or close to the background colour dropped; nested parts (a highlight inside a body) merged."""
    from skimage.segmentation import felzenszwalb

    h, w = img.shape[:2]
    labels = felzenszwalb(img, scale=2.3 * max(h, w), sigma=1.0, min_size=max(4, (h * w) // 500))
    flat = labels.ravel()
    counts = np.bincount(flat)
    means = np.stack([np.bincount(flat, weights=img[..., c].ravel().astype(np.float64))
                      for c in range(3)], 1) / np.maximum(counts, 1)[:, None]
    bg = background_color(img).astype(np.float64)

    def keep(i, n):
        return n <= 0.2 * h * w and np.abs(means[i] - bg).max() >= min_contrast

    boxes = _segment_boxes(labels, keep, pad, min_area_frac * h * w)
    return [tuple(int(v) for v in b) for b in _merge_nested(boxes)]


def blob_boxes(img: np.ndarray, pad: int = 1, min_area_frac: float = 0.004,
               threshold: float = 30.0) -> list[Box]:
    """Boxes of the connected components whose colour differs from the background colour."""
    from scipy import ndimage

    h, w = img.shape[:2]
    diff = np.abs(img.astype(np.int16) - background_color(img).astype(np.int16)).max(-1)
    labels, _ = ndimage.label(diff > threshold)  # 4-connected: objects touching at a corner stay apart
    boxes = _segment_boxes(labels, lambda i, n: i > 0, pad, min_area_frac * h * w)
    return [tuple(int(v) for v in b) for b in _merge_nested(boxes, frac=0.9)]


def chroma_boxes(img: np.ndarray, palette: dict[str, tuple[int, int, int]] | None = None, chroma: float = 30.0,
                 contrast: float = 30.0, darker: float = 1.5, min_area: int = 4, split: int = 3) -> list[list[int]]:
    """Boxes of the objects of a scene on a grey floor: pixels of clear colour (max - min channel
    above `chroma`) are given the nearest palette colour by chromaticity, so shading and shadows do
    not split an object and touching objects of two colours stay apart; colourless pixels whose
    brightness stands out from their row's median (the floor, by far the most common thing in a
    row) by `contrast` (`darker` times as much below: shadows are darker floor) join the palette's grey. Each
    class's mask is closed with a 2x2 element (a metal object's reflections break it up) and its
    connected components become boxes. Objects of one colour that touch or overlap in the picture
    make one component: a component of 20 pixels or more is also cut by a watershed of its distance
    transform, seeded at maxima at least `split` pixels apart (0: no cut), and each piece's box is
    added beside the whole's. The palette defaults to CLEVR's colours."""
    from scipy import ndimage

    from ..world.render3d import CLEVR_COLORS
    palette = palette or CLEVR_COLORS
    names = list(palette)
    ref = np.array([palette[n] for n in names], np.float32) + 1
    ref /= ref.sum(1, keepdims=True)
    x = img.astype(np.float32)
    coloured = x.max(2) - x.min(2) > chroma
    lum = x.mean(2)
    floor = np.median(lum, axis=1, keepdims=True)
    grey = ~coloured & ((lum - floor > contrast) | (floor - lum > darker * contrast))
    chrom = (x + 1) / (x + 1).sum(2, keepdims=True)
    cls = np.where(coloured, np.argmin(((chrom[:, :, None, :] - ref[None, None]) ** 2).sum(-1), -1), -1)
    out: list[list[int]] = []
    for k, name in enumerate(names):
        mask = (cls == k) | grey if name in ("gray", "grey") else cls == k
        mask = mask | ndimage.binary_closing(mask, structure=np.ones((2, 2)))
        lab = ndimage.label(mask)[0]
        for i, sl in enumerate(ndimage.find_objects(lab), 1):
            if sl is None:
                continue
            ys, xs = sl
            if (ys.stop - ys.start) * (xs.stop - xs.start) >= min_area:
                out.append([xs.start, ys.start, xs.stop, ys.stop])
            if split:
                out += [[xs.start + b[0], ys.start + b[1], xs.start + b[2], ys.start + b[3]]
                        for b in _watershed_pieces(lab[sl] == i, split)]
    return [list(b) for b in dict.fromkeys(tuple(b) for b in out)]


def _watershed_pieces(comp: np.ndarray, min_distance: int, min_px: int = 20) -> list[list[int]]:
    """Boxes of the pieces a watershed of the distance transform cuts a component into (none when
    it is small or has one centre)."""
    from scipy import ndimage
    from skimage.feature import peak_local_max
    from skimage.segmentation import watershed

    if comp.sum() < min_px:
        return []
    dist = ndimage.distance_transform_edt(comp)
    peaks = peak_local_max(dist, min_distance=min_distance, threshold_abs=1.0, labels=comp.astype(int),
                           exclude_border=False)
    if len(peaks) < 2:
        return []
    markers = np.zeros(comp.shape, int)
    markers[tuple(peaks.T)] = np.arange(1, len(peaks) + 1)
    pieces = ndimage.find_objects(watershed(-dist, markers, mask=comp))
    return [[xs.start, ys.start, xs.stop, ys.stop] for ys, xs in filter(None, pieces)]


def _area(b) -> int:
    return max(0, b[2] - b[0]) * max(0, b[3] - b[1])


def _merge_nested(boxes: list[list[int]], frac: float = 0.6) -> list[list[int]]:
    """Merge boxes whose intersection covers >= frac of the smaller one, until none do."""
    boxes = [list(b) for b in boxes]
    merged = True
    while merged:
        merged = False
        for i, j in itertools.combinations(range(len(boxes)), 2):
            a, b = boxes[i], boxes[j]
            inter = _area([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])])
            if inter >= frac * min(_area(a), _area(b)):
                boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                del boxes[j]
                merged = True
                break
    return sorted(boxes, key=lambda b: (b[1], b[0]))


def iou(a, b) -> float:
    """Intersection over union of two boxes."""
    inter = _area([max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])])
    return inter / max(1, _area(a) + _area(b) - inter)


def selective_boxes(img: np.ndarray, k: int = 8, side: int = 192, scale: float = 100.0,
                    min_frac: float = 0.01, max_frac: float = 0.9, nms: float = 0.7) -> list[Box]:
    """Object-like boxes on a photo, the strategy of selective search (Uijlings et al. 2013, IJCV):
    over-segment (Felzenszwalb, on a copy `side` px long), merge the most similar neighbours
    (colour histogram + small size + tight fill) until one segment is left, and keep the boxes of
    the last merges first (large, whole objects before parts), between min_frac and max_frac of
    the image, without near-duplicates (IoU >= nms), at most k."""
    from scipy import ndimage
    from skimage.segmentation import felzenszwalb
    from skimage.transform import resize

    H, W = img.shape[:2]
    f = min(1.0, side / max(H, W))
    small = img if f == 1.0 else (resize(img, (max(1, round(H * f)), max(1, round(W * f))),
                                         anti_aliasing=True) * 255).astype(np.uint8)
    h, w = small.shape[:2]
    labels = felzenszwalb(small, scale=scale, sigma=0.8, min_size=max(4, h * w // 400))
    n, flat = int(labels.max()) + 1, labels.ravel()
    size = np.bincount(flat, minlength=n).astype(np.float64)
    bins = (small.reshape(-1, 3).astype(np.int64) * 25) // 256  # 25 bins per channel
    hist = np.stack([np.bincount(flat * 25 + bins[:, c], minlength=n * 25).reshape(n, 25) for c in range(3)], 1)
    hist = hist.reshape(n, 75) / np.maximum(size[:, None] * 3, 1)
    box = [(sl[1].start, sl[0].start, sl[1].stop, sl[0].stop) for sl in ndimage.find_objects(labels + 1)]
    region = {i: (hist[i], size[i], box[i]) for i in range(n)}
    area = float(h * w)

    def union(a, b):
        return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))

    def similarity(i: int, j: int) -> float:
        (hi, si, bi), (hj, sj, bj) = region[i], region[j]
        return float(np.minimum(hi, hj).sum() + (1 - (si + sj) / area)
                     + (1 - (_area(union(bi, bj)) - si - sj) / area))

    pairs = set()
    for a, b in ((labels[:, :-1], labels[:, 1:]), (labels[:-1], labels[1:])):
        edge = a != b
        pairs |= {(min(x, y), max(x, y)) for x, y in zip(a[edge].tolist(), b[edge].tolist())}
    sims = {p: similarity(*p) for p in pairs}
    merged = []
    while sims:
        i, j = max(sims, key=sims.get)
        (hi, si, bi), (hj, sj, bj) = region[i], region[j]
        new = len(region)
        region[new] = ((hi * si + hj * sj) / (si + sj), si + sj, union(bi, bj))
        merged.append(new)
        neighbours = {x for p in sims if i in p or j in p for x in p} - {i, j}
        sims = {p: v for p, v in sims.items() if i not in p and j not in p}
        sims.update({(t, new): similarity(t, new) for t in neighbours})
    out: list[Box] = []
    for r in list(reversed(merged)) + list(range(n)):
        b = region[r][2]
        if not min_frac <= _area(b) / area <= max_frac:
            continue
        b = tuple(min(int(round(v / f)), lim) for v, lim in zip(b, (W, H, W, H)))
        if all(iou(b, o) < nms for o in out):
            out.append(b)
            if len(out) == k:
                break
    return out


def regions_for(img: np.ndarray, cfg: RegionConfig, gt: list[Box] | None = None) -> list[Region]:
    """All regions of one image under a config (singles first, then unions, then the full image)."""
    h, w = img.shape[:2]
    return with_groups(base_boxes(img, cfg, gt), cfg, w, h)


def base_boxes(img: np.ndarray, cfg: RegionConfig, gt: list[Box] | None = None) -> list[Box]:
    """The single regions' boxes of one image under a config."""
    return base_boxes_many([img], cfg, [gt])[0]


def base_boxes_many(imgs: list[np.ndarray], cfg: RegionConfig, gts: list) -> list[list[Box]]:
    """`base_boxes` of many pictures (a learned source runs its network over them in batches)."""
    return REGION_SOURCES[cfg.source].boxes(imgs, cfg, gts)


def _each(find: Callable[[np.ndarray, RegionConfig], list[Box]]):
    """A source that looks at one picture at a time."""
    return lambda imgs, cfg, gts: [find(img, cfg) for img in imgs]


def _given(imgs: list[np.ndarray], cfg: RegionConfig, gts: list) -> list[list[Box]]:
    if any(gt is None for gt in gts):
        raise UnbagError("region source 'gt' needs a benchmark that ships boxes")
    return [[tuple(int(v) for v in b) for b in gt] for gt in gts]


def _objects(imgs: list[np.ndarray], cfg: RegionConfig, gts: list) -> list[list[Box]]:
    from .proposer import object_boxes_many  # learned on the 3D world's training stream (proposer.py)
    return object_boxes_many(imgs)


def _proposer_id() -> str:
    from .proposer import weights_id
    return weights_id()


@dataclass(frozen=True)
class RegionSource:
    """A region source (`--regions NAME`): its boxes for a batch of pictures (and their benchmark
    boxes, for `gt`), whether the full picture joins its regions by default, whether it reads the
    benchmark's boxes, and for a learned one the id of its weights (results record it)."""
    boxes: Callable[[list[np.ndarray], RegionConfig, list], list[list[Box]]]
    full: bool = False
    given: bool = False
    weights_id: Callable[[], str] | None = None


REGION_SOURCES: dict[str, RegionSource] = {
    "gt": RegionSource(_given, given=True),
    "grid": RegionSource(_each(lambda img, cfg: grid_boxes(img.shape[1], img.shape[0], cfg.scales, cfg.overlap)),
                         full=True),
    "selective": RegionSource(_each(lambda img, cfg: selective_boxes(img, cfg.k)), full=True),
    "proposals": RegionSource(_each(lambda img, cfg: proposal_boxes(img, cfg.pad))),
    "blobs": RegionSource(_each(lambda img, cfg: blob_boxes(img, cfg.pad))),
    "chroma": RegionSource(_each(lambda img, cfg: chroma_boxes(img))),
    "objects": RegionSource(_objects, weights_id=_proposer_id),
}


def with_groups(base: list[Box], cfg: RegionConfig, w: int, h: int) -> list[Region]:
    """Single regions, their unions (with +groups) and the full image (where the source wants it)."""
    regions: list[Region] = [(tuple(int(v) for v in b),) for b in dict.fromkeys(tuple(b) for b in base)]
    singles = len(regions)
    if cfg.groups and 2 <= singles <= cfg.max_group_base:
        for k in range(2, min(cfg.max_group, singles) + 1):
            regions += [tuple(r[0] for r in c) for c in itertools.combinations(regions[:singles], k)]
    full = cfg.full if cfg.full is not None else REGION_SOURCES[cfg.source].full
    if (full or not regions) and ((0, 0, w, h),) not in regions:
        regions.append(((0, 0, w, h),))
    return regions


def frame_regions(img: np.ndarray, cfg: RegionConfig, frame: str,
                  gt: list[Box] | None = None) -> tuple[np.ndarray, list[Region]]:
    """The picture SGI encodes and its regions. In mask mode the picture is framed (`framed`); a
    `pad` frame's regions are found on the image itself and moved into the square (the padding
    holds no object, and would join segments at the border), a `crop` frame's on the square the
    encoder sees. A crop-mode region is cut out and resized whole: no frame. Token mode frames as
    mask mode does (its regions select patches of the framed picture)."""
    return frame_regions_many([img], cfg, frame, [gt])[0]


def frame_regions_many(imgs: list[np.ndarray], cfg: RegionConfig, frame: str,
                       gts: list | None = None) -> list[tuple[np.ndarray, list[Region]]]:
    """`frame_regions` of many pictures (their boxes found together: `base_boxes_many`)."""
    gts = gts if gts is not None else [None] * len(imgs)
    if cfg.mode != "crop" and frame != "pad":
        squares = [framed(img, "crop", gt) for img, gt in zip(imgs, gts)]
        imgs, gts = [sq for sq, _ in squares], [gt for _, gt in squares]
    out = []
    for img, boxes in zip(imgs, base_boxes_many(imgs, cfg, gts)):
        if cfg.mode != "crop" and frame == "pad":
            img, boxes = framed(img, "pad", [list(b) for b in boxes])
        out.append((img, with_groups(boxes, cfg, img.shape[1], img.shape[0])))
    return out


def plain_background(img: np.ndarray, threshold: float = 30.0, share: float = 0.5) -> bool:
    """Whether at least `share` of the pixels lie within `threshold` of the median colour: a scene
    on a plain background (where `blobs` finds objects), not a photo."""
    diff = np.abs(img.astype(np.int16) - background_color(img).astype(np.int16)).max(-1)
    return float((diff <= threshold).mean()) >= share


def patch_cover(region: Region, side: int, grid: int, min_cover: float = 0.5) -> np.ndarray:
    """Row-major indices of the cells of a grid x grid patch grid over a side x side picture that
    the region covers for at least `min_cover` of their area (at least its best-covered cell)."""
    m = np.zeros((side, side), np.float32)
    for x0, y0, x1, y1 in region:
        m[y0:y1, x0:x1] = 1
    e = np.linspace(0, side, grid + 1).round().astype(int)
    cover = np.add.reduceat(np.add.reduceat(m, e[:-1], 0), e[:-1], 1) / np.outer(np.diff(e), np.diff(e))
    idx = np.flatnonzero(cover >= min_cover)
    return idx if len(idx) else np.array([int(cover.argmax())])


def masked(img: np.ndarray, region: Region, fill: np.ndarray) -> np.ndarray:
    """The image with everything outside the region's boxes replaced by `fill` (a colour [3], or a
    picture of the image's shape)."""
    out = np.empty_like(img)
    out[:] = fill
    for x0, y0, x1, y1 in region:
        out[y0:y1, x0:x1] = img[y0:y1, x0:x1]
    return out


def masked_shifted(img: np.ndarray, region: Region, fill: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """`masked`, with the region's pixels moved by (dx, dy); `fill` everywhere else."""
    out = np.empty_like(img)
    out[:] = fill
    for x0, y0, x1, y1 in region:
        out[y0 + dy:y1 + dy, x0 + dx:x1 + dx] = img[y0:y1, x0:x1]
    return out


def phase_offsets(region: Region, side: tuple[int, int], patch: int, phases: int) -> list[tuple[int, int]]:
    """`phases` shifts (o, o), o = k * patch / phases, that put the region at as many phases of the
    patch grid; along each axis o - patch (the same phase) replaces o when o would push the region
    out of the frame, and 0 when neither fits."""
    h, w = side
    x0, y0 = min(b[0] for b in region), min(b[1] for b in region)
    x1, y1 = max(b[2] for b in region), max(b[3] for b in region)

    def shift(o: int, lo: int, hi: int, n: int) -> int:  # the offset, or one patch back, that stays inside
        return next((d for d in (o, o - patch) if lo + d >= 0 and hi + d <= n), 0)
    offsets = [round(k * patch / phases) for k in range(phases)]
    return [(shift(o, x0, x1, w), shift(o, y0, y1, h)) for o in offsets]


def cropped(img: np.ndarray, region: Region) -> np.ndarray:
    """The bounding box of the region's boxes, cut out (the encoder's preprocessing resizes it)."""
    x0 = min(b[0] for b in region)
    y0 = min(b[1] for b in region)
    x1 = max(b[2] for b in region)
    y1 = max(b[3] for b in region)
    return np.ascontiguousarray(img[y0:y1, x0:x1])
