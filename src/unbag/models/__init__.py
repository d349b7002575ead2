"""Model registry: string specs -> backends.

A spec is `PREFIX:REST` for a prefix some backend's file declares (its module-level `MODELS`
table of `Form`s: overlay.py `builtin`, openclip.py `open_clip`, hf.py `hf`), or the path of a saved
model folder. To add a backend: one module next to this one (CONTRIBUTING.md).
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError
from ..utils import collect
from .base import Backend, Form, ImageFeatures, TextFeatures
from .overlay import BUILTIN_DIR, BUILTIN_WEIGHTS, METHODS_DIR, load_builtin, load_overlay


def _folder(spec: str, device) -> Backend:
    """A saved unbag model, overlay or packed built-in model folder."""
    path = Path(spec)
    if (path / "overlay.json").is_file():
        return load_overlay(path, spec, load, device)
    if (path / "open_clip_config.json").is_file() and (path / "weights.safetensors").is_file() \
            and not (path / "open_clip_model.safetensors").is_file():
        return load_builtin(path, spec, device)  # a packed built-in model (shipping.save_builtin)
    if (path / "open_clip_config.json").is_file():
        from .openclip import OpenCLIPBackend
        return OpenCLIPBackend(spec, f"local-dir:{path}", device=device)
    if (path / "config.json").is_file() and (path / "preprocessor_config.json").is_file():
        from .hf import HFBackend
        return HFBackend(spec, str(path), device=device)  # a transformers model folder (one unbag saved, for one)
    if path.exists():
        raise UnbagError(f"{spec}: not a model directory (no open_clip_config.json, or config.json with "
                         "preprocessor_config.json, inside)")
    raise UnbagError(f"unknown model spec {spec!r}; known forms: {', '.join(SPEC_FORMS)}")


MODELS: dict[str, Form] = collect(__name__, "MODELS")  # every backend file's table, by prefix
SPEC_FORMS = tuple(f.form for f in MODELS.values()) + (
    "PATH (a model folder unbag saved: open_clip, transformers, an overlay or a packed built-in model)",)


def check_spec(spec: str) -> None:
    """Refuse a model spec that cannot load, as far as can be told without loading it: an unknown
    form, a missing folder, an open_clip name without weights, a shipped method that is not."""
    if not isinstance(spec, str) or not spec:
        raise UnbagError(f"model spec {spec!r}: expected a spec string; known forms: {', '.join(SPEC_FORMS)}")
    prefix, _, rest = spec.partition(":")
    if prefix in MODELS:
        MODELS[prefix].check(rest)
    elif not Path(spec).is_dir():
        raise UnbagError(f"unknown model spec {spec!r}; known forms: {', '.join(SPEC_FORMS)}")


DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu")  # devices that hold weights and compute (not `meta`)


def check_device(device: str | torch.device) -> torch.device:
    """The torch device a --device names; refused when torch does not know it, when it computes
    nothing (`meta`) or has no such GPU."""
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise UnbagError(f"--device {device!r}: not a device torch knows (cpu, cuda, cuda:N, mps)") from None
    if d.type not in DEVICE_TYPES:
        raise UnbagError(f"--device {device}: not a device that holds weights and computes; use one of "
                         f"{', '.join(DEVICE_TYPES)}")
    if d.type == "cuda" and not torch.cuda.is_available():
        raise UnbagError(f"--device {device}: torch sees no CUDA GPU on this machine (torch {torch.__version__}); "
                         "use --device cpu")
    if d.type == "cuda" and d.index is not None and d.index >= torch.cuda.device_count():
        raise UnbagError(f"--device {device}: torch sees {torch.cuda.device_count()} GPU(s)")
    return d


def load(spec: str, device: str | torch.device = "cpu") -> Backend:
    """Build the backend a spec names, on `device`, in eval mode."""
    check_device(device)
    prefix, _, rest = spec.partition(":")
    if prefix in MODELS:
        return MODELS[prefix].loader(spec, rest, device)
    return _folder(spec, device)


__all__ = ["Backend", "ImageFeatures", "TextFeatures", "Form", "load", "check_spec", "check_device", "MODELS", "BUILTIN_DIR",
           "BUILTIN_WEIGHTS", "METHODS_DIR", "SPEC_FORMS"]
