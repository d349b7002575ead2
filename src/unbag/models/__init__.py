"""Model registry: string specs -> backends."""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Backend, ImageFeatures, TextFeatures

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "weights" / "builtin"
METHODS_DIR = Path(__file__).resolve().parent.parent / "weights" / "methods"

SPEC_FORMS = ("builtin", "builtin:METHOD (shipped ft|negclip|clic|degla checkpoints)", "open_clip:NAME[@PRETRAINED]", "open_clip:local-dir:PATH",
              "open_clip:hf-hub:ORG/REPO", "hf:PATH_OR_ID (transformers CLIP/SigLIP)", "PATH (a saved unbag / open_clip local-dir model)")


def load(spec: str, device: str | torch.device = "cpu") -> Backend:
    """Build the backend a spec names, on `device`, in eval mode."""
    from .openclip import OpenCLIPBackend, parse

    if spec == "builtin":
        if not (BUILTIN_DIR / "open_clip_model.safetensors").is_file():
            raise UnbagError(f"builtin: weights missing at {BUILTIN_DIR} (see src/unbag/weights/"
                             "builtin/TRAINING.md for the command that trains them)")
        return OpenCLIPBackend(spec, f"local-dir:{BUILTIN_DIR}", device=device)
    if spec.startswith("builtin:"):
        from .overlay import load_overlay
        name = spec[len("builtin:"):]
        if not (METHODS_DIR / name / "overlay.json").is_file():
            have = sorted(p.name for p in METHODS_DIR.glob("*") if (p / "overlay.json").is_file())
            raise UnbagError(f"{spec}: no shipped checkpoint {name!r}; available: {', '.join(have) or 'none'}")
        return load_overlay(METHODS_DIR / name, spec, device)
    if spec.startswith("hf:"):
        from .hf import HFBackend
        return HFBackend(spec, spec[len("hf:"):], device=device)
    if spec.startswith("open_clip:"):
        name, pretrained = parse(spec[len("open_clip:"):])
        return OpenCLIPBackend(spec, name, pretrained, device=device)
    path = Path(spec)
    if (path / "overlay.json").is_file():
        from .overlay import load_overlay
        return load_overlay(path, spec, device)
    if (path / "open_clip_config.json").is_file():
        return OpenCLIPBackend(spec, f"local-dir:{path}", device=device)
    if path.exists():
        raise UnbagError(f"{spec}: not a model directory (no open_clip_config.json inside)")
    raise UnbagError(f"unknown model spec {spec!r}; known forms: {', '.join(SPEC_FORMS)}")


__all__ = ["Backend", "ImageFeatures", "TextFeatures", "load", "BUILTIN_DIR", "METHODS_DIR", "SPEC_FORMS"]
