"""Protocol `sgi`: Structure-Guided Inference on frozen encoders (arXiv 2604.11496, 2506.09691).

score(I, T) = mean over the caption's segments of the best cosine between the segment and an
image region (`assign="max"`, the paper's), or of a one-to-one segment-region assignment
(`assign="hungarian"`), optionally mixed with the global cosine: (1 - mix) * sgi + mix * global.

unbag's choices (documented in docs/sgi.md; the `sgi:paper` preset turns them all off): regions
default to background-difference blobs plus their unions, masked in place (absolute size and
position survive, unlike the paper's crops); with `match="kind"` an object segment is matched only
to single regions, a counted group segment ("three red spheres") only to unions of exactly that
many regions, and a relation segment to any region, so "a red cube" cannot be satisfied by a union
that merely contains red and a cube somewhere. Two structure checks add +-weight / K to the score
(K segments): `counts="check"` (count_weight) for each counted phrase of a caption that counts,
as the number of single regions that fit its description best matches the number it says or
not; `relations="geometry"` (relation_weight) for each relation whose words name a spatial
predicate (left of, right of, above, on, under, in front of, behind...), as it holds or fails
between the regions chosen for its subject and object.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from rich.progress import Progress

from ..benchmarks.base import Benchmark, load_image
from ..errors import UnbagError
from ..models.base import Backend, weights_id
from ..scoring.encode import encode_texts, unique
from . import segments as seg
from .cache import RegionCache, default_cache
from .regions import (FRAMES, RegionConfig, background_color, frame_regions, framed, masked,
                      masked_shifted, patch_cover, phase_offsets)

ASSIGN = ("max", "hungarian")
MATCH = ("kind", "all")
RELATIONS = ("cosine", "geometry")
COUNTS = ("off", "check")


@dataclass
class SGIConfig:
    """Options of the `sgi` protocol (all recorded in the results JSON)."""
    regions: str = "blobs+groups"
    mode: str = "mask"
    assign: str = "max"
    match: str = "kind"
    mix: float = 0.0
    segmenter: str = "auto"  # auto: the benchmark's own segments when it has them, else spaCy
    relations: str = "geometry"  # also check the spatial predicate on the chosen regions; cosine: do not
    relation_weight: float = 0.1
    scales: tuple[float, ...] = (0.5, 1 / 3)
    phases: int = 2  # mask mode: each region encoded at this many shifts against the patch grid, averaged
    frame: str = "pad"  # mask mode, non-square images: pad to a square (nothing lost) | crop (the encoder's)
    counts: str = "check"  # counted phrases must fit as many single regions as they say; off: do not
    count_weight: float = 0.3
    cache_dir: str | None = None

    def __post_init__(self):
        if self.assign not in ASSIGN:
            raise UnbagError(f"unknown SGI assignment {self.assign!r}; use one of {', '.join(ASSIGN)}")
        if self.match not in MATCH:
            raise UnbagError(f"unknown SGI match policy {self.match!r}; use one of {', '.join(MATCH)}")
        if not 0.0 <= self.mix <= 1.0:
            raise UnbagError(f"SGI mix must be in [0, 1], got {self.mix}")
        if self.relations not in RELATIONS:
            raise UnbagError(f"unknown relation scoring {self.relations!r}; use one of {', '.join(RELATIONS)}")
        if not isinstance(self.phases, int) or self.phases < 1:
            raise UnbagError(f"SGI phases must be a whole number >= 1, got {self.phases!r}")
        if self.frame not in FRAMES:
            raise UnbagError(f"unknown SGI frame {self.frame!r}; use one of {', '.join(FRAMES)}")
        if self.counts not in COUNTS:
            raise UnbagError(f"unknown SGI count handling {self.counts!r}; use one of {', '.join(COUNTS)}")
        if self.segmenter not in ("auto", "spacy", "rules"):
            raise UnbagError(f"unknown segmenter {self.segmenter!r}; use auto, spacy or rules")
        self.scales = _scales(self.scales)
        self.region_cfg = RegionConfig.parse(self.regions, self.mode, scales=self.scales)

    @classmethod
    def from_options(cls, options: dict) -> "SGIConfig":
        """A config from keyword options (CLI flags, plan tables, API keywords); an unknown name
        is an error that lists the options."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise UnbagError(f"unknown SGI option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                             f"SGI takes: {', '.join(names)}")
        for name in ("mix", "relation_weight", "count_weight"):
            if name in options and not isinstance(options[name], (int, float)):
                raise UnbagError(f"SGI option {name} must be a number, got {options[name]!r}")
        return cls(**options)

    @classmethod
    def for_benchmark(cls, name: str) -> "SGIConfig":
        """unbag's SGI with the options the benchmark `name` declares for its images (photos: `selective`)."""
        from ..benchmarks import sgi_defaults
        return cls.from_options(sgi_defaults(name))

    def record(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "cache_dir"}


def _scales(value) -> tuple[float, ...]:
    """Grid window sides as fractions of the image side in (0, 1], from '0.5,0.333' or numbers."""
    try:
        vals = tuple(float(x) for x in (value.split(",") if isinstance(value, str) else value))
    except (TypeError, ValueError):
        raise UnbagError(f"SGI scales are comma-separated numbers, got {value!r}") from None
    if not vals or not all(0 < v <= 1 for v in vals):
        raise UnbagError(f"SGI scales are fractions of the image side in (0, 1], got {value!r}")
    return vals


@dataclass
class ImageRegions:
    """The regions of one image and their L2-normalised embeddings."""
    regions: list
    emb: torch.Tensor  # [R, D]


def _inputs(backend: Backend, arr: np.ndarray, regions: list, mode: str, phases: int = 1) -> torch.Tensor:
    """Encoder inputs [R * V, 3, H, W] for the regions of one image, V views per region (V = phases in
    mask mode, each view shifting the region to another phase of the patch grid; else 1)."""
    h, w = backend.image_size
    if mode == "mask":
        fill = background_color(arr)
        if arr.shape[:2] != (h, w) and arr.shape[0] == arr.shape[1] and h == w:
            # a (square) picture of another size: resized to the model's input once and masked
            # there, which is what masking first and resizing each input gives, up to interpolation
            # at the box borders, for a fraction of the cost on photos
            arr, regions = _resized(arr, regions, h)
        patch = backend.patch_px() if phases > 1 else None
        if patch:
            side = arr.shape[:2]
            # shifts are set in the benchmark's pixels; rescaled to the model's by preprocess below
            patch = max(1, round(patch * min(side) / min(h, w)))
            outs = [masked_shifted(arr, r, fill, dx, dy) for r in regions
                    for dx, dy in phase_offsets(r, side, patch, phases)]
        else:
            outs = [masked(arr, r, fill) for r in regions]
        if arr.shape[:2] == (h, w):
            return backend.normalize_pixels(torch.from_numpy(np.stack(outs)))
        return torch.stack([backend.preprocess(Image.fromarray(o)) for o in outs])
    # crop: squash-resize each crop to the model's input, as the paper does (PIL's crop of the
    # picture holds the same pixels as cutting the array, without a conversion per region)
    pic = Image.fromarray(arr)
    outs = [np.asarray(pic.crop(_box(r)).resize((w, h), Image.Resampling.BICUBIC)) for r in regions]
    return backend.normalize_pixels(torch.from_numpy(np.stack(outs)))


def _resized(arr: np.ndarray, regions: list, px: int) -> tuple[np.ndarray, list]:
    """A square picture resized to px x px (bicubic) and its regions' boxes scaled with it (none empty)."""
    s = px / arr.shape[0]

    def scale(b):
        x0, y0 = min(px - 1, round(b[0] * s)), min(px - 1, round(b[1] * s))
        return (x0, y0, max(x0 + 1, round(b[2] * s)), max(y0 + 1, round(b[3] * s)))
    small = np.asarray(Image.fromarray(arr).resize((px, px), Image.Resampling.BICUBIC))
    return small, [tuple(scale(b) for b in r) for r in regions]


def _views(mode: str, phases: int, backend: Backend) -> int:
    """Inputs per region: `phases` shifted views in mask mode on a patch encoder, else 1."""
    return phases if mode == "mask" and phases > 1 and backend.patch_px() else 1


def _token_inputs(backend: Backend, arr: np.ndarray, regions: list) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Token mode: the framed picture's pixels [1, 3, H, W] and the patches each region covers."""
    h, w = backend.image_size
    px = (backend.normalize_pixels(torch.from_numpy(np.array(arr[None]))) if arr.shape[:2] == (h, w)
          else backend.preprocess(Image.fromarray(arr))[None])
    grid = h // backend.patch_px()
    return px, [torch.from_numpy(patch_cover(r, arr.shape[0], grid)) for r in regions]


def region_mode(backend: Backend, mode: str) -> str:
    """The mode regions are encoded in: `tokens` needs a ViT that can run on a subset of its
    patch tokens (open_clip and transformers CLIP/SigLIP); other encoders mask pixels instead."""
    if mode != "tokens":
        return mode
    if backend.patch_px():
        with torch.inference_mode():
            h, w = backend.image_size
            probe = backend.encode_patch_subsets(torch.zeros(1, 3, h, w, device=backend.device),
                                                 [(0, torch.tensor([0]))])
        if probe is not None:
            return mode
    warnings.warn(f"SGI mode 'tokens': {backend.spec} cannot encode a subset of patch tokens; "
                  "regions are masked in the picture instead (mode 'mask')", stacklevel=3)
    return "mask"


# Regions found per (picture, region config, frame, boxes given): the search does not depend on the
# model, and one run scores the same images under several models and protocols.
_REGIONS: dict[tuple, list] = {}
_REGIONS_MAX = 200_000


def framed_regions(arr: np.ndarray, pixels: str, cfg: SGIConfig, gt: list | None) -> tuple[np.ndarray, list]:
    """`frame_regions`, remembered by the picture's content hash `pixels` within the process."""
    k = (pixels, cfg.region_cfg, cfg.frame, None if gt is None else tuple(map(tuple, gt)))
    regions = _REGIONS.get(k)
    if regions is None:
        pic, regions = frame_regions(arr, cfg.region_cfg, cfg.frame, gt)
        if len(_REGIONS) >= _REGIONS_MAX:
            _REGIONS.clear()
        _REGIONS[k] = regions
        return pic, regions
    return (arr if cfg.mode == "crop" else framed(arr, cfg.frame)[0]), regions


@torch.inference_mode()
def encode_regions(backend: Backend, bench: Benchmark, cfg: SGIConfig, batch_size: int = 512,
                   cache: RegionCache | None = None, progress: bool = False) -> list[ImageRegions]:
    """Regions and embeddings of every distinct image of the benchmark (positions = image refs)."""
    from ..benchmarks.base import image_key

    cache = cache if cache is not None else (RegionCache(cfg.cache_dir) if cfg.cache_dir else default_cache())
    refs, wheres, _ = bench.flat()
    gts = [[o["box"] for o in objs] if objs else None  # the benchmark's object boxes, where it has them
           for it in bench.items for objs in (it.meta.get("objects") or [None] * len(it.images))]
    order, inverse = unique([image_key(r) for r in refs])
    done: dict[int, ImageRegions] = {}
    pending: list[tuple] = []  # (slot, regions, cache key, inputs[, patches per region in token mode])
    n_pending = 0  # encoder inputs waiting in `pending`
    mode = region_mode(backend, cfg.mode)
    views = _views(mode, cfg.phases, backend)
    # the image tower's weights, not the spec: two loads of a random or re-saved model differ, and
    # a text-only fine-tune (CLIC) encodes regions exactly as its base does
    model_id = weights_id(backend, image_only=True)

    def flush():
        nonlocal n_pending
        n_pending = 0
        if not pending:
            return
        x = torch.cat([p[3] for p in pending]).to(backend.device)
        if mode == "tokens":
            keep = [(k, idx) for k, p in enumerate(pending) for idx in p[4]]  # one picture per image
            emb = torch.cat([backend.encode_patch_subsets(x, keep[s:s + batch_size]).float().cpu()
                             for s in range(0, len(keep), batch_size)])
        else:
            emb = torch.cat([backend.encode_images(x[s:s + batch_size]).embeds.float().cpu()
                             for s in range(0, len(x), batch_size)])
        emb = F.normalize(emb, dim=-1)
        emb = F.normalize(emb.view(len(emb) // views, views, -1).mean(1), dim=-1)  # average the views
        start = 0
        for slot, regions, key, *_ in pending:
            e = emb[start:start + len(regions)]
            start += len(regions)
            cache.put(key, e)
            done[slot] = ImageRegions(regions, e)
        pending.clear()

    with Progress(disable=not progress) as bar:
        task = bar.add_task("sgi regions", total=len(order))
        for slot, i in enumerate(order):
            arr = np.asarray(load_image(refs[i], wheres[i], bench.image_size))
            pixels = image_key(arr)
            arr, regions = framed_regions(arr, pixels, cfg, gts[i])
            key = cache.key(model_id, f"{pixels}/{cfg.frame}", regions, mode, f"median/phases{views}")
            hit = cache.get(key)
            if hit is not None:
                done[slot] = ImageRegions(regions, hit)
            else:
                if mode == "tokens":
                    pending.append((slot, regions, key, *_token_inputs(backend, arr, regions)))
                else:
                    pending.append((slot, regions, key, _inputs(backend, arr, regions, mode, cfg.phases)))
                n_pending += len(regions) * views
                if n_pending >= batch_size:
                    flush()
            bar.update(task, advance=1)
        flush()
    return [done[j] for j in inverse]


def caption_segments(bench: Benchmark, cfg: SGIConfig) -> list[list[seg.Segment]]:
    """Segments of every caption of the benchmark, item by item, caption by caption."""
    out = []
    for it in bench.items:
        shipped = it.meta.get("segments")
        for c, text in enumerate(it.captions):
            if cfg.segmenter == "auto" and shipped:
                out.append(seg.from_grammar(shipped[c]))
            elif cfg.segmenter == "rules":
                out.append(seg.parse_rules(text))
            else:
                out.append(seg.parse(text))
    return out


def aggregate(sim: torch.Tensor, allowed: torch.Tensor, assign: str) -> tuple[float, list[int]]:
    """(mean over segments of the matched similarity, chosen region per segment) for S [K, R]."""
    s = sim.masked_fill(~allowed, float("-inf"))
    best, choice = s.max(dim=1)
    if assign == "hungarian" and sim.shape[0] > 1:
        from scipy.optimize import linear_sum_assignment

        cost = (-s).clamp(max=1e6).numpy()  # disallowed pairs get a prohibitive cost
        rows, cols = linear_sum_assignment(cost)
        # segments left without a region (more segments than regions) keep their best match
        for r, c in zip(rows, cols):
            if allowed[r, c]:
                best[r], choice[r] = sim[r, c], c
    return float(best.mean()), choice.tolist()


def allowed_pairs(segs: list[seg.Segment], r: ImageRegions) -> torch.Tensor:
    """match="kind": which regions each segment may take [K, R]. An object segment takes single
    regions; a group segment that says how many ("three ...") takes unions of that many regions;
    everything else any region. A rule that would leave a segment nothing falls back to any region."""
    sizes = torch.tensor([len(reg) for reg in r.regions])
    rows = []
    for s in segs:
        want = region_count(s)
        row = sizes == want if want else torch.ones_like(sizes, dtype=torch.bool)
        rows.append(row if row.any() else torch.ones_like(sizes, dtype=torch.bool))
    return torch.stack(rows)


def region_count(s: seg.Segment) -> int:
    """How many boxes a region must join to match segment `s` under match="kind" (0: any region)."""
    return 1 if s.kind == "object" else (s.count or 0 if s.kind == "group" else 0)


def _box(region) -> tuple[float, float, float, float]:
    """The box around a region's boxes (x0, y0, x1, y1)."""
    return (min(b[0] for b in region), min(b[1] for b in region), max(b[2] for b in region),
            max(b[3] for b in region))


def holds(predicate: str, a, b) -> bool:
    """Whether `predicate` holds between regions a (subject) and b (object): left / right / above /
    below compare centres; front / behind compare bottom edges (nearer the camera reaches lower)."""
    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = _box(a), _box(b)
    acx, acy, bcx, bcy = (ax0 + ax1) / 2, (ay0 + ay1) / 2, (bx0 + bx1) / 2, (by0 + by1) / 2
    return {"left": acx < bcx, "right": acx > bcx, "above": acy < bcy, "below": acy > bcy,
            "front": ay1 > by1, "behind": ay1 < by1}[predicate]


def geometry(segs: list[seg.Segment], chosen: list) -> list[float]:
    """Per segment: +1 / -1 when a relation's spatial predicate holds / fails between the regions
    chosen for its subject and object, 0 for everything else."""
    out = []
    for s in segs:
        if s.kind != "relation" or s.parts is None or s.predicate is None:
            out.append(0.0)
            continue
        out.append(1.0 if holds(s.predicate, chosen[s.parts[0]], chosen[s.parts[1]]) else -1.0)
    return out


def counts_things(segs: list[seg.Segment]) -> bool:
    """Whether a caption counts: some phrase names two or more things ("three red cubes")."""
    return any(s.kind == "group" and (s.count or 0) >= 2 for s in segs)


def count_check(segs: list[seg.Segment], r: ImageRegions, desc: torch.Tensor) -> list[float]:
    """Per segment of a caption that counts ("three red cubes and one blue cone"): +1 / -1 when the
    phrase names as many things as there are single regions that fit its description ("a red cube")
    best among the caption's counted phrases, 0 for phrases without a count. Each description's
    cosines are centred over the image's single regions first (its mean subtracted), so a
    description the encoder scores high everywhere does not claim every region. No check when no
    phrase names two or more."""
    out = [0.0] * len(segs)
    if not counts_things(segs):
        return out
    counted = [k for k, s in enumerate(segs) if s.kind in ("object", "group") and s.count]
    singles = [j for j, reg in enumerate(r.regions) if len(reg) == 1]
    if len(singles) < 2 or len(counted) < 2:
        return out
    sim = desc[counted] @ r.emb[singles].T  # [counted, singles]
    # centred, not standardised: dividing by the spread would blow a description that barely
    # separates the regions (the text "a large sphere" on spheres and cylinders alike) up to the
    # weight of one that separates them clearly
    best = (sim - sim.mean(1, keepdim=True)).argmax(0)
    for i, k in enumerate(counted):
        out[k] = 1.0 if int((best == i).sum()) == segs[k].count else -1.0
    return out


def checkable(segs: list[seg.Segment], cfg: SGIConfig) -> bool:
    """Whether the count or geometry check can add anything to a caption with these segments."""
    counts = cfg.counts == "check" and counts_things(segs)
    return counts or (cfg.relations == "geometry" and any(s.kind == "relation" and s.predicate for s in segs))


def score_sgi(backend: Backend, bench: Benchmark, batch_size: int = 512, progress: bool = False,
              cfg: SGIConfig | None = None, details: list | None = None,
              cache: RegionCache | None = None, checks_only: bool = False) -> torch.Tensor:
    """Score tensor [items, images, captions] under SGI; `details` (a list) receives, per item,
    image and caption, the segments, regions chosen and their similarities. `checks_only`: only
    what the count and geometry checks add (0 where a caption has nothing to check)."""
    cfg = cfg or SGIConfig()
    items = bench.items
    n_img, n_cap = len(items[0].images), len(items[0].captions)
    regs = encode_regions(backend, bench, cfg, batch_size, cache=cache, progress=progress)
    segs = caption_segments(bench, cfg)
    flat = [s.text for ss in segs for s in ss]
    temb = encode_texts(backend, flat, progress=progress)
    # description embeddings ("a red cube" for "three red cubes"), for the captions that count
    counting = [cfg.counts == "check" and counts_things(ss) for ss in segs]
    demb = encode_texts(backend, [seg.description(s.text) for ss, k in zip(segs, counting) if k for s in ss],
                        progress=progress)
    scores = torch.empty(len(items), n_img, n_cap)
    t = d = 0
    seg_emb, desc_emb = [], []
    for ss, k in zip(segs, counting):
        seg_emb.append(temb[t:t + len(ss)])
        desc_emb.append(demb[d:d + len(ss)] if k else None)
        t += len(ss)
        d += len(ss) if k else 0
    for n in range(len(items)):
        for i in range(n_img):
            r = regs[n * n_img + i]
            for c in range(n_cap):
                ss, e = segs[n * n_cap + c], seg_emb[n * n_cap + c]
                if checks_only and not checkable(ss, cfg):
                    scores[n, i, c] = 0.0
                    continue
                sim = e @ r.emb.T
                allowed = allowed_pairs(ss, r) if cfg.match == "kind" else torch.ones_like(sim, dtype=torch.bool)
                scores[n, i, c], choice = aggregate(sim, allowed, cfg.assign)
                if checks_only:
                    scores[n, i, c] = 0.0
                if desc_emb[n * n_cap + c] is not None:
                    scores[n, i, c] += cfg.count_weight * sum(count_check(ss, r, desc_emb[n * n_cap + c])) / len(ss)
                if cfg.relations == "geometry":
                    geo = geometry(ss, [r.regions[j] for j in choice])
                    scores[n, i, c] += cfg.relation_weight * sum(geo) / len(ss)
                if details is not None:
                    details.append({"item": n, "image": i, "caption": c,
                                    "segments": [(s.text, s.kind) for s in ss],
                                    "regions": [r.regions[j] for j in choice],
                                    "sims": [float(sim[k, j]) for k, j in enumerate(choice)]})
    if cfg.mix > 0 and not checks_only:
        from ..scoring.cosine import score_global
        scores = (1 - cfg.mix) * scores + cfg.mix * score_global(backend, bench, batch_size, progress)
    return scores
