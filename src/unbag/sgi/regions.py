"""Image regions for SGI: where they come from, and how one becomes an encoder input.

A region is a tuple of boxes (x0, y0, x1, y1) in pixels, end exclusive: one box for a single
region, several for a group (the union of its members' boxes, not their bounding box, so an
object lying between two members stays hidden).

Sources: `gt` (boxes shipped with a benchmark), `grid` (multi-scale sliding windows with
overlap, full image included), `proposals` (Felzenszwalb graph segmentation, class-agnostic, for
photos), `blobs` (connected components that differ from the background colour: fast, for scenes on
a plain background such as ctrl), each optionally `+groups` (unions of 2..max_group regions, for
counts and relations).
Inputs: `mask` keeps the region in place and fills the rest with the image's background colour
(keeps absolute size and position); `crop` cuts the bounding box out and resizes it to the model
input, as in the paper (loses absolute size).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import UnbagError

Box = tuple[int, int, int, int]
Region = tuple[Box, ...]

SOURCES = ("gt", "grid", "proposals", "blobs")
MODES = ("mask", "crop")


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
    full: bool | None = None  # include the whole image; default: only for `grid`
    pad: int = 1  # pixels added around proposal boxes

    @classmethod
    def parse(cls, spec: str, mode: str = "mask", **kw) -> "RegionConfig":
        """'proposals+groups', 'gt', 'grid' ... -> RegionConfig."""
        parts = spec.split("+")
        source, rest = parts[0], parts[1:]
        if source not in SOURCES or any(r != "groups" for r in rest):
            raise UnbagError(f"unknown region source {spec!r}; use one of {', '.join(SOURCES)}, "
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


def regions_for(img: np.ndarray, cfg: RegionConfig, gt: list[Box] | None = None) -> list[Region]:
    """All regions of one image under a config (singles first, then unions, then the full image)."""
    h, w = img.shape[:2]
    if cfg.source == "gt":
        if gt is None:
            raise UnbagError("region source 'gt' needs a benchmark that ships boxes")
        base = [tuple(int(v) for v in b) for b in gt]
    elif cfg.source == "grid":
        base = grid_boxes(w, h, cfg.scales, cfg.overlap)
    elif cfg.source == "blobs":
        base = blob_boxes(img, cfg.pad)
    else:
        base = proposal_boxes(img, cfg.pad)
    regions: list[Region] = [(b,) for b in dict.fromkeys(base)]
    singles = len(regions)
    if cfg.groups and 2 <= singles <= cfg.max_group_base:
        for k in range(2, min(cfg.max_group, singles) + 1):
            regions += [tuple(r[0] for r in c) for c in itertools.combinations(regions[:singles], k)]
    full = cfg.full if cfg.full is not None else cfg.source == "grid"
    if full or not regions:
        regions.append(((0, 0, w, h),))
    return regions


def masked(img: np.ndarray, region: Region, fill: np.ndarray) -> np.ndarray:
    """The image with everything outside the region's boxes replaced by `fill`."""
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

    def fit(o: int, lo: int, hi: int, n: int) -> int:
        return next((d for d in (o, o - patch) if lo + d >= 0 and hi + d <= n), 0)
    offsets = [round(k * patch / phases) for k in range(phases)]
    return [(fit(o, x0, x1, w), fit(o, y0, y1, h)) for o in offsets]


def cropped(img: np.ndarray, region: Region) -> np.ndarray:
    """The bounding box of the region's boxes, cut out (the encoder's preprocessing resizes it)."""
    x0 = min(b[0] for b in region)
    y0 = min(b[1] for b in region)
    x1 = max(b[2] for b in region)
    y1 = max(b[3] for b in region)
    return np.ascontiguousarray(img[y0:y1, x0:x1])
