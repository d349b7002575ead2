"""Model registry: string specs -> backends.

A spec is `PREFIX:REST` for a registered prefix, or the path of a saved model folder. To add a
backend: implement `Backend` (base.py) in a module next to this one and register its prefix here
(CONTRIBUTING.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from ..errors import UnbagError
from .base import Backend, ImageFeatures, TextFeatures

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "weights" / "builtin"
BUILTIN_WEIGHTS = BUILTIN_DIR / "weights.safetensors"  # packed (models/overlay.py: pack_builtin; shipping.py)
METHODS_DIR = Path(__file__).resolve().parent.parent / "weights" / "methods"


@dataclass(frozen=True)
class Form:
    """A registered kind of model spec."""
    form: str  # how its specs read, for help and errors
    loader: Callable[[str, str, "str | torch.device"], Backend]  # (spec, text after 'PREFIX:', device)
    # a cheap check of a spec without loading it (text after 'PREFIX:'): plans check every model
    # before they write anything
    check: Callable[[str], None] = lambda rest: None


def _check_builtin(rest: str) -> None:
    if rest and not (METHODS_DIR / rest / "overlay.json").is_file():
        have = sorted(p.name for p in METHODS_DIR.glob("*") if (p / "overlay.json").is_file())
        raise UnbagError(f"builtin:{rest}: no shipped checkpoint {rest!r}; available: {', '.join(have) or 'none'}")


def _builtin(spec: str, rest: str, device) -> Backend:
    from .overlay import load_builtin, load_overlay
    if not rest:
        if not BUILTIN_WEIGHTS.is_file():
            raise UnbagError(f"builtin: weights missing at {BUILTIN_WEIGHTS} (see src/unbag/weights/"
                             "builtin/TRAINING.md for the command that trains them)")
        return load_builtin(BUILTIN_DIR, spec, device)
    _check_builtin(rest)
    return load_overlay(METHODS_DIR / rest, spec, load, device)


def _check_open_clip(rest: str) -> None:
    from .openclip import check
    check(rest)


def _check_hf(rest: str) -> None:
    if not rest:
        raise UnbagError("hf: names no model; use hf:PATH_OR_ID")


def _open_clip(spec: str, rest: str, device) -> Backend:
    from .openclip import OpenCLIPBackend, parse
    name, pretrained = parse(rest)
    return OpenCLIPBackend(spec, name, pretrained, device=device)


def _hf(spec: str, rest: str, device) -> Backend:
    from .hf import HFBackend
    return HFBackend(spec, rest, device=device)


def _folder(spec: str, device) -> Backend:
    """A saved unbag model, overlay or packed built-in model folder."""
    path = Path(spec)
    if (path / "overlay.json").is_file():
        from .overlay import load_overlay
        return load_overlay(path, spec, load, device)
    if (path / "open_clip_config.json").is_file() and (path / "weights.safetensors").is_file() \
            and not (path / "open_clip_model.safetensors").is_file():
        from .overlay import load_builtin
        return load_builtin(path, spec, device)  # a packed built-in model (shipping.save_builtin)
    if (path / "open_clip_config.json").is_file():
        from .openclip import OpenCLIPBackend
        return OpenCLIPBackend(spec, f"local-dir:{path}", device=device)
    if (path / "config.json").is_file() and (path / "preprocessor_config.json").is_file():
        return _hf(spec, str(path), device)  # a transformers model folder (one unbag saved, for one)
    if path.exists():
        raise UnbagError(f"{spec}: not a model directory (no open_clip_config.json, or config.json with "
                         "preprocessor_config.json, inside)")
    raise UnbagError(f"unknown model spec {spec!r}; known forms: {', '.join(SPEC_FORMS)}")


MODELS: dict[str, Form] = {
    "builtin": Form("builtin | builtin:METHOD (shipped ft|negclip|clic|degla checkpoints)", _builtin,
                    _check_builtin),
    "open_clip": Form("open_clip:NAME[@PRETRAINED] | open_clip:local-dir:PATH | open_clip:hf-hub:ORG/REPO",
                      _open_clip, _check_open_clip),
    "hf": Form("hf:PATH_OR_ID (transformers CLIP/SigLIP)", _hf, _check_hf),
}
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
