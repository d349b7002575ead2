"""The backend contract every model implements: global and joint-space token features."""
from __future__ import annotations

import functools
import hashlib
import os
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable

import torch
from PIL import Image

from ..errors import UnbagError


@dataclass(frozen=True)
class Form:
    """A kind of model spec (`PREFIX:REST`), declared by its backend's file in a module-level
    `MODELS = {PREFIX: Form(...)}` table that models/__init__.py collects."""
    form: str  # how its specs read, for help and errors
    loader: Callable[[str, str, "str | torch.device"], "Backend"]  # (spec, text after 'PREFIX:', device)
    # a cheap check of a spec without loading it (text after 'PREFIX:'): plans check every model
    # before they write anything
    check: Callable[[str], None] = lambda rest: None


@dataclass
class ImageFeatures:
    """Image features in the joint space (not normalised)."""
    embeds: torch.Tensor  # [N, D] global embedding
    patches: torch.Tensor | None = None  # [N, P, D] patch tokens projected into the joint space
    grid: tuple[int, int] | None = None  # patch grid (rows, cols), P = rows * cols


@dataclass
class TextFeatures:
    """Text features in the joint space (not normalised)."""
    embeds: torch.Tensor  # [N, D] global embedding
    tokens: torch.Tensor | None = None  # [N, L, D] token embeddings projected into the joint space
    mask: torch.Tensor | None = None  # [N, L] bool, True for real tokens (start..end of text)


# Inputs per encoder call on CPU at inference: small calls keep activations in cache. Measured on
# 2 cores, built-in model, ctrl 200 items per category: 8,000 captions encode in 0.35 s in chunks
# of 64 vs 0.65 s in one call of 1,024 (the global cell 1.55 s vs 1.8 s); a ViT-B/32 encodes 19
# vs 16 images/s in chunks of 64 vs 256. GPUs take the caller's batch whole.
CPU_CHUNK = 64


def cpu_chunked(encode: Callable) -> Callable:
    """Wrap a backend's encode_images / encode_texts to run in CPU_CHUNK pieces on CPU without
    gradients (the result is the same: no layer of these encoders mixes batch rows)."""
    @functools.wraps(encode)
    def run(self, x: torch.Tensor, tokens: bool = False):
        if x.device.type != "cpu" or torch.is_grad_enabled() or len(x) <= CPU_CHUNK:
            return encode(self, x, tokens)
        parts = [encode(self, x[s:s + CPU_CHUNK], tokens) for s in range(0, len(x), CPU_CHUNK)]
        first = parts[0]
        return type(first)(**{f.name: torch.cat([getattr(p, f.name) for p in parts])
                              if isinstance(getattr(first, f.name), torch.Tensor) else getattr(first, f.name)
                              for f in fields(first)})
    return run


class Backend(ABC):
    """A dual encoder behind one interface; `spec` is the string it was created from."""

    spec: str
    model: torch.nn.Module
    image_size: tuple[int, int]
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    @abstractmethod
    def preprocess(self, image: Image.Image) -> torch.Tensor:
        """PIL image -> normalised tensor [3, H, W] for this model."""

    def preprocessor(self):
        """A picklable callable PIL image -> tensor (for DataLoader workers); `preprocess` by default."""
        return self.preprocess

    @abstractmethod
    def tokenize(self, texts: list[str]) -> torch.Tensor:
        """Texts -> token ids [N, L]."""

    @abstractmethod
    def encode_images(self, pixels: torch.Tensor, tokens: bool = False) -> ImageFeatures:
        """Preprocessed pixels [N, 3, H, W] -> features (patches too when tokens=True)."""

    @abstractmethod
    def encode_texts(self, ids: torch.Tensor, tokens: bool = False) -> TextFeatures:
        """Token ids [N, L] -> features (token embeddings and mask too when tokens=True)."""

    @property
    @abstractmethod
    def logit_scale(self) -> torch.Tensor:
        """exp(learned temperature parameter), clamped to <= 100 as in CLIP."""

    weights_file = "model.safetensors"  # the weights' file name in a saved model folder

    @abstractmethod
    def write_config(self, folder: Path, extra: dict | None = None) -> None:
        """Write the files besides the weights that make `folder` loadable; `extra` records how it was made."""

    def write(self, folder: str | os.PathLike, extra: dict | None = None) -> None:
        """Write weights and config into an existing folder (non-atomic: see `save`)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        state = {k: v.detach().contiguous().cpu() for k, v in self.model.state_dict().items()}
        save_file(state, str(folder / self.weights_file), metadata={"format": "pt"})
        self.write_config(folder, extra)

    def save(self, out: str | os.PathLike, extra: dict | None = None, overwrite: bool = False) -> Path:
        """Write a model folder that `unbag.models.load(out)` loads back, atomically (a folder of
        other files is refused unless `overwrite`)."""
        from ..utils import atomic_dir

        with atomic_dir(out, "model", overwrite) as tmp:
            self.write(tmp, extra)
        return Path(out)

    def config_record(self) -> dict:
        """Everything besides the weights that shapes this model's scores: its class, input size,
        normalisation (and, in backends that have them, the architecture config and the whole
        preprocessing config). `config_id` hashes it: a result is reused only when it is the same."""
        return {"class": type(self).__name__, "image_size": list(self.image_size), "mean": list(self.mean),
                "std": list(self.std)}

    precision: str = "auto"  # what scoring encodes in (scoring/encode.py: auto = bf16 on CUDA, fp32 elsewhere)
    random_weights: bool = False  # built with random weights on purpose (`open_clip:NAME@random`)
    image_tower: tuple[str, ...] = ()  # state-dict prefixes of the image tower (empty: not known)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def patch_px(self) -> int | None:
        """Side in pixels of the image patch behind one token (None for encoders without patches)."""
        if not hasattr(self, "_patch_px"):
            h, w = self.image_size
            try:
                with torch.inference_mode():
                    grid = self.encode_images(torch.zeros(1, 3, h, w, device=self.device), tokens=True).grid
            except (TypeError, ValueError, AttributeError, NotImplementedError):
                grid = None  # an encoder that cannot give patch tokens (e.g. a ResNet tower)
            self._patch_px = w // grid[1] if grid else None
        return self._patch_px

    def set_patch_dropout(self, share: float) -> None:
        """Drop `share` of each image's patch tokens at random in training mode (FLIP, arXiv
        2212.00794); 0 keeps them all. For ViT image towers that support it."""
        raise UnbagError(f"{self.spec}: patch dropout is for open_clip ViT image towers")

    def encode_patch_subsets(self, pixels: torch.Tensor, keep: list[tuple[int, torch.Tensor]]) -> torch.Tensor | None:
        """Global embeddings [R, D] of image regions, each encoded from only the patch tokens it
        covers, at their own positions (keep[r] = (index into pixels [N, 3, H, W], row-major patch
        indices)); None where the encoder cannot (SGI then masks pixels instead)."""
        return None

    def normalize_pixels(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 [N, H, W, 3] already at the model's size -> normalised float [N, 3, H, W].

        The fast path for rendered images; equals `preprocess` when no resize is needed.
        """
        # made contiguous first: a channels-last view would send convolutions down another kernel
        # whose sums round differently, and the same picture must score the same from a file
        x = images.permute(0, 3, 1, 2).contiguous().float().div_(255)
        mean = torch.tensor(self.mean, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(1, 3, 1, 1)
        return (x - mean) / std


def resize_crop(image: Image.Image, px: int) -> Image.Image:
    """Resize the shorter side to px (bicubic) and centre-crop to px x px, as CLIP's eval preprocessing."""
    image = image.convert("RGB")
    w, h = image.size
    s = px / min(w, h)
    image = image.resize((max(px, round(w * s)), max(px, round(h * s))), Image.BICUBIC)
    w, h = image.size
    left, top = (w - px) // 2, (h - px) // 2
    return image.crop((left, top, left + px, top + px))


def memo_tokenize(memo: dict, texts: list[str], tokenize: Callable[[list[str]], torch.Tensor],
                  limit: int = 200_000) -> torch.Tensor:
    """Token ids [N, L] of texts, each distinct text tokenised once per memo (`tokenize` pads to a
    fixed length): a plan's cells of one model (global, SGI, each head) share its captions."""
    if not texts:
        return tokenize([])
    new = [t for t in dict.fromkeys(texts) if t not in memo]
    if new:
        if len(memo) + len(new) > limit:
            memo.clear()
            new = list(dict.fromkeys(texts))
        memo.update(zip(new, tokenize(new)))
    return torch.stack([memo[t] for t in texts])


def weights_id(backend: "Backend", image_only: bool = False) -> str:
    """SHA-1 of a backend's weights: which weights made a result, a feature cache or a head
    (`image_only`: of the image tower's alone, what image embeddings depend on, where the backend
    names it; a text-only fine-tune such as CLIC shares its base's)."""
    # remembered per model while no tensor of its state changes (in place or replaced): a job
    # asks for it once per scored shape of a benchmark
    state = backend.model.state_dict()
    stamp = tuple((k, v.data_ptr(), v._version) for k, v in state.items())
    memo = _WEIGHTS_IDS.setdefault(backend.model, {}).setdefault(image_only, {})
    if memo.get("stamp") == stamp:
        return memo["id"]
    h = hashlib.sha1()
    prefixes = backend.image_tower if image_only else ()
    if prefixes:
        h.update(b"image tower")
    for k, v in sorted(state.items()):
        if prefixes and not k.startswith(prefixes):
            continue
        h.update(k.encode())
        h.update(v.detach().float().cpu().numpy().tobytes())
    memo.update(stamp=stamp, id=h.hexdigest())
    return memo["id"]


_WEIGHTS_IDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def config_id(backend: "Backend") -> str:
    """SHA-1 of a backend's configuration (`Backend.config_record`): with `weights_id`, which model
    made a result (a changed open_clip_config.json or preprocess_cfg changes it, the weights unchanged)."""
    import json
    return hashlib.sha1(json.dumps(backend.config_record(), sort_keys=True, default=str).encode()).hexdigest()


def by_length(keep: list[tuple[int, torch.Tensor]],
              encode: Callable[[list[int]], torch.Tensor]) -> torch.Tensor:
    """[len(keep), D]: `encode(rows)` run once per group of regions that keep the same number of
    patches (one batch without padding, so each region is encoded exactly as if alone)."""
    groups: dict[int, list[int]] = {}
    for r, (_, idx) in enumerate(keep):
        groups.setdefault(len(idx), []).append(r)
    out = None
    for rows in groups.values():
        emb = encode(rows)
        out = emb.new_empty(len(keep), emb.shape[-1]) if out is None else out
        out[rows] = emb
    return out


def gather_tokens(x: torch.Tensor, keep: list[tuple[int, torch.Tensor]], rows: list[int],
                  lead: int) -> torch.Tensor:
    """[len(rows), lead + L, D]: each kept region's first `lead` tokens (CLS) and its patch tokens."""
    img = torch.tensor([keep[r][0] for r in rows], device=x.device)
    idx = torch.stack([keep[r][1] for r in rows]).to(x.device) + lead
    if lead:
        idx = torch.cat([torch.arange(lead, device=x.device).expand(len(rows), lead), idx], 1)
    return x[img[:, None], idx]
