"""SGI's two inputs: each distinct image's regions and their embeddings (found once per picture,
encoded in batches, cached), and each caption's segments."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from rich.progress import Progress

from ..benchmarks.base import Benchmark, load_image
from ..cache import LRU, JobCache
from ..errors import UnbagError
from ..models.base import Backend, weights_id
from ..scoring.encode import unique
from . import segments as seg
from .cache import RegionCache
from .config import SGIConfig
from .regions import (
    REGION_SOURCES,
    background_color,
    frame_regions_many,
    framed,
    masked,
    masked_shifted,
    patch_cover,
    phase_offsets,
    row_fill,
)


def box_of(region) -> tuple[float, float, float, float]:
    """The box around a region's boxes (x0, y0, x1, y1)."""
    return (min(b[0] for b in region), min(b[1] for b in region), max(b[2] for b in region),
            max(b[3] for b in region))


@dataclass
class ImageRegions:
    """The regions of one image and their L2-normalised embeddings."""
    regions: list
    emb: torch.Tensor  # [R, D]


def _inputs(backend: Backend, arr: np.ndarray, regions: list, mode: str, phases: int = 1,
            fill_with: str = "median") -> torch.Tensor:
    """Encoder inputs [R * V, 3, H, W] for the regions of one image, V views per region (V = phases in
    mask mode, each view shifting the region to another phase of the patch grid; else 1); in mask
    mode the rest of the picture is filled with its median colour or each row's (`fill_with`)."""
    h, w = backend.image_size
    if mode == "mask":
        fill = background_color(arr)
        if arr.shape[:2] != (h, w) and arr.shape[0] == arr.shape[1] and h == w:
            # a (square) picture of another size: resized to the model's input once and masked
            # there, which is what masking first and resizing each input gives, up to interpolation
            # at the box borders, for a fraction of the cost on photos
            arr, regions = _resized(arr, regions, h)
        if fill_with == "rows":
            # a floor seen in perspective changes shade with the row: a flat colour around a
            # region is a picture no model saw (docs/world3d.md, SGI on 3D scenes)
            fill = row_fill(arr)
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
    outs = [np.asarray(pic.crop(box_of(r)).resize((w, h), Image.Resampling.BICUBIC)) for r in regions]
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


# Region searches remembered in a job: the search does not depend on the model, and one plan scores
# the same images under several models and protocols
SEARCHES_MAX = 200_000


def region_parts(cache: JobCache | None, cfg: SGIConfig) -> tuple[RegionCache, LRU]:
    """(region embeddings, region searches) of the job's cache for `cfg` (fresh ones without a
    job cache; the embeddings also on disk under `cfg.cache_dir`)."""
    cache = cache if cache is not None else JobCache()
    embeds = cache.part(("sgi.embeddings", cfg.cache_dir), lambda b: RegionCache(cfg.cache_dir, max_bytes=b))
    return embeds, cache.part("sgi.searches", lambda b: LRU(SEARCHES_MAX))


def framed_regions(arrs: list[np.ndarray], pixels: list[str], cfg: SGIConfig, gts: list,
                   searches: LRU | None = None) -> list[tuple[np.ndarray, list]]:
    """`frame_regions_many`, each picture's regions remembered in `searches` by its content hash
    (`pixels`); the pictures searched for are searched together."""
    keys = [(p, cfg.region_cfg, cfg.frame, None if gt is None else tuple(map(tuple, gt)))
            for p, gt in zip(pixels, gts)]
    known = [None if searches is None else searches.get(k) for k in keys]
    miss = [j for j, r in enumerate(known) if r is None]
    found = dict(zip(miss, frame_regions_many([arrs[j] for j in miss], cfg.region_cfg, cfg.frame,
                                              [gts[j] for j in miss])))
    out = []
    for j, (arr, k) in enumerate(zip(arrs, keys)):
        if j in found:
            if searches is not None:
                searches.put(k, found[j][1])
            out.append(found[j])
        else:
            out.append((arr if cfg.mode == "crop" else framed(arr, cfg.frame)[0], known[j]))
    return out


# Pictures loaded and searched for regions together (a learned region source runs them in batches)
CHUNK = 64


def _check_boxes(boxes: list, side: tuple[int, int], where: str) -> None:
    """The benchmark's object boxes lie inside their picture (a box past its edge would mask
    pixels that are not there)."""
    h, w = side
    for b in boxes:
        x0, y0, x1, y1 = b
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            raise UnbagError(f"{where}: object box {list(b)} (meta.objects) is not inside the {w}x{h} picture")


@torch.inference_mode()
def encode_regions(backend: Backend, bench: Benchmark, cfg: SGIConfig, batch_size: int = 512,
                   cache: JobCache | None = None, progress: bool = False) -> list[ImageRegions]:
    """Regions and embeddings of every distinct image of the benchmark (positions = image refs),
    remembered in the job's `cache`."""
    from ..benchmarks.base import image_key

    embeds, searches = region_parts(cache, cfg)
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
            embeds.put(key, e)
            done[slot] = ImageRegions(regions, e)
        pending.clear()

    def encode_one(slot: int, arr: np.ndarray, regions: list, pixels: str):
        nonlocal n_pending
        key = embeds.key(model_id, f"{pixels}/{cfg.frame}", regions, mode, f"{cfg.fill}/phases{views}")
        hit = embeds.get(key)
        if hit is not None:
            done[slot] = ImageRegions(regions, hit)
            return
        if mode == "tokens":
            pending.append((slot, regions, key, *_token_inputs(backend, arr, regions)))
        else:
            pending.append((slot, regions, key, _inputs(backend, arr, regions, mode, cfg.phases, cfg.fill)))
        n_pending += len(regions) * views
        if n_pending >= batch_size:
            flush()

    with Progress(disable=not progress) as bar:
        task = bar.add_task("sgi regions", total=len(order))
        slots = list(enumerate(order))
        for start in range(0, len(slots), CHUNK):
            chunk = slots[start:start + CHUNK]
            arrs = [np.asarray(load_image(refs[i], wheres[i], bench.image_size)) for _, i in chunk]
            if REGION_SOURCES[cfg.region_cfg.source].given:
                for arr, (_, i) in zip(arrs, chunk):
                    _check_boxes(gts[i] or [], arr.shape[:2], wheres[i])
            pixels = [image_key(a) for a in arrs]
            found = framed_regions(arrs, pixels, cfg, [gts[i] for _, i in chunk], searches)
            for (slot, _), (arr, regions), pix in zip(chunk, found, pixels):
                encode_one(slot, arr, regions, pix)
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
