"""Model registry: string specs -> backends."""
from __future__ import annotations

from pathlib import Path

import torch

from ..errors import UnbagError
from .base import Backend, ImageFeatures, TextFeatures

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "weights" / "builtin"

SPEC_FORMS = ("builtin", "open_clip:NAME[@PRETRAINED]", "open_clip:local-dir:PATH",
              "open_clip:hf-hub:ORG/REPO", "PATH (a saved unbag / open_clip local-dir model)")


def load(spec: str, device: str | torch.device = "cpu") -> Backend:
    """Build the backend a spec names, on `device`, in eval mode."""
    from .openclip import OpenCLIPBackend, parse

    if spec == "builtin":
        if not (BUILTIN_DIR / "open_clip_model.safetensors").is_file():
            raise UnbagError(f"builtin: weights missing at {BUILTIN_DIR} (see src/unbag/weights/"
                             "builtin/TRAINING.md for the command that trains them)")
        return OpenCLIPBackend(spec, f"local-dir:{BUILTIN_DIR}", device=device)
    if spec.startswith("open_clip:"):
        name, pretrained = parse(spec[len("open_clip:"):])
        return OpenCLIPBackend(spec, name, pretrained, device=device)
    path = Path(spec)
    if (path / "open_clip_config.json").is_file():
        return OpenCLIPBackend(spec, f"local-dir:{path}", device=device)
    if path.exists():
        raise UnbagError(f"{spec}: not a model directory (no open_clip_config.json inside)")
    raise UnbagError(f"unknown model spec {spec!r}; known forms: {', '.join(SPEC_FORMS)}")


__all__ = ["Backend", "ImageFeatures", "TextFeatures", "load", "BUILTIN_DIR", "SPEC_FORMS"]
