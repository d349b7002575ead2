"""Frozen features of a batch of images and captions, as a head's cache holds them (heads/cache.py)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..models.base import Backend

MAX_PHRASES = 5
MAX_REGIONS = 16  # single regions come first, so a crowded image loses unions, not objects
MAX_ALTS = 12  # changes of a counted world phrase that names a size, a color and a material: 1 + 7 + 1 + 3 numbers


def _l2(t: torch.Tensor) -> torch.Tensor:
    return F.normalize(t.float(), dim=-1).cpu()


@torch.inference_mode()
def image_features(backend: Backend, pixels: torch.Tensor, early: bool = True) -> dict:
    """Frozen global and patch features of preprocessed images [N, 3, H, W] (`early`: also the
    first-block patches, where the backend offers them; a second encoder pass)."""
    im = backend.encode_images(pixels.to(backend.device), tokens=True)
    out = {"img_global": _l2(im.embeds), "img_patches": _l2(im.patches)}
    if early and hasattr(backend, "early_patches"):  # for heads with early=True
        out["img_patches_early"] = _l2(backend.early_patches(pixels.to(backend.device)))
    return out


@torch.inference_mode()
def region_features(backend: Backend, images: list, sgi: dict | None = None) -> dict:
    """SGI's region embeddings of images (arrays or refs), padded to MAX_REGIONS, and region sizes
    (`sgi`: SGI options, e.g. the photo benchmarks' region source; default unbag's SGI)."""
    from ..benchmarks.base import Benchmark, Item
    from ..sgi.config import SGIConfig
    from ..sgi.encode import encode_regions

    bench = Benchmark("regions", "regions", [Item(str(k), [im], [], {}) for k, im in enumerate(images)])
    return pack_regions(encode_regions(backend, bench, SGIConfig.from_options(sgi or {})))


def pack_regions(regions: list) -> dict:
    """Cache fields img_regions [N, MAX_REGIONS, D] and reg_size [N, MAX_REGIONS] of sgi ImageRegions."""
    emb = torch.zeros(len(regions), MAX_REGIONS, regions[0].emb.shape[1] if regions else 1)
    size = torch.zeros(len(regions), MAX_REGIONS, dtype=torch.long)
    for k, r in enumerate(regions):
        n = min(len(r.regions), MAX_REGIONS)
        emb[k, :n] = r.emb[:n]
        size[k, :n] = torch.tensor([len(reg) for reg in r.regions[:n]])
    return {"img_regions": emb, "reg_size": size}


@torch.inference_mode()
def alternative_features(backend: Backend, phrases: list[list], dim: int, world: str | None = None) -> dict:
    """phr_alt [N, MAX_PHRASES, MAX_ALTS, dim] and phr_alt_mask: each phrase's one-word changes in
    the vocabulary of `world` (None: the default world; world/phrases.py `alternatives`), each
    distinct text encoded once."""
    from ..world.phrases import VOCABULARIES, alternatives
    from ..world.styles import resolve

    world = resolve(world)

    alts = [[alternatives(p.text, VOCABULARIES[world])[:MAX_ALTS] for p in ps[:MAX_PHRASES]] for ps in phrases]
    texts = sorted({a for per in alts for al in per for a in al})
    row = {t: i for i, t in enumerate(texts)}
    emb = torch.cat([_l2(backend.encode_texts(backend.tokenize(texts[s:s + 1024]).to(backend.device)).embeds)
                     for s in range(0, len(texts), 1024)]) if texts else torch.zeros(0, dim)
    out = torch.zeros(len(phrases), MAX_PHRASES, MAX_ALTS, dim)
    mask = torch.zeros(len(phrases), MAX_PHRASES, MAX_ALTS, dtype=torch.bool)
    for i, per in enumerate(alts):
        for k, al in enumerate(per):
            if al:
                out[i, k, :len(al)], mask[i, k, :len(al)] = emb[[row[a] for a in al]], True
    return {"phr_alt": out, "phr_alt_mask": mask}


@torch.inference_mode()
def text_features(backend: Backend, captions: list[str], phrases: list[list]) -> dict:
    """Frozen global and token features of captions, and each phrase (an sgi Segment) encoded on its own."""
    from ..sgi.match import region_count

    dev = backend.device
    tx = backend.encode_texts(backend.tokenize(captions).to(dev), tokens=True)
    flat = [p.text for ps in phrases for p in ps[:MAX_PHRASES]]
    pe = _l2(backend.encode_texts(backend.tokenize(flat).to(dev)).embeds)
    phr = torch.zeros(len(captions), MAX_PHRASES, pe.shape[1])
    pmask = torch.zeros(len(captions), MAX_PHRASES, dtype=torch.bool)
    want = torch.zeros(len(captions), MAX_PHRASES, dtype=torch.long)
    k = 0
    for i, ps in enumerate(phrases):
        n = min(len(ps), MAX_PHRASES)
        phr[i, :n], pmask[i, :n] = pe[k:k + n], True
        want[i, :n] = torch.tensor([region_count(p) for p in ps[:n]])
        k += n
    return {"txt_global": _l2(tx.embeds), "txt_tokens": _l2(tx.tokens), "txt_mask": tx.mask.cpu(),
            "phr_global": phr, "phr_mask": pmask, "phr_want": want}
