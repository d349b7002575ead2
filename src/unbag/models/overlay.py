"""Small shipped checkpoints: only the tensors a method changed, over a named base model.

A fine-tuned copy of the built-in model is 14 MB in fp32; an overlay keeps the tensors that differ
from its base (CLIC: the text tower and logit scale only) in fp16, and `load` rebuilds the model
by loading the base and copying them in. The fp16 rounding moves the ctrl scores by well under a
point (measured in weights/methods/README.md).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..errors import UnbagError
from ..utils import atomic_dir


def save_overlay(model: str, base: str, out: str | os.PathLike, meta: dict | None = None) -> Path:
    """Write the tensors of model `model` that differ from `base` (both specs) to folder `out`."""
    from . import load

    tuned, ref = load(model).model.state_dict(), load(base).model.state_dict()
    if set(tuned) != set(ref):
        raise UnbagError(f"{model} and {base} do not have the same tensors")
    changed = {k: v.detach().cpu().contiguous() for k, v in tuned.items() if not torch.equal(v, ref[k])}
    state = {k: v.half() if v.is_floating_point() else v for k, v in changed.items()}
    with atomic_dir(out) as tmp:
        save_file(state, str(tmp / "weights.safetensors"))
        (tmp / "overlay.json").write_text(json.dumps({
            "base": base, "dtype": "float16", "tensors": len(state),
            "parameters": int(sum(v.numel() for v in state.values())), **(meta or {})}, indent=2) + "\n")
    return Path(out)


def load_overlay(path: Path, spec: str, device: str | torch.device = "cpu"):
    """The base model of an overlay folder with its tensors replaced."""
    from . import load

    info = json.loads((path / "overlay.json").read_text())
    backend = load(info["base"], device=device)
    state = load_file(str(path / "weights.safetensors"))
    own = backend.model.state_dict()
    unknown = set(state) - set(own)
    if unknown:
        raise UnbagError(f"{path}/weights.safetensors: tensors {sorted(unknown)[:3]} are not in {info['base']}")
    with torch.no_grad():
        for k, v in state.items():
            own[k].copy_(v.to(own[k].dtype))
    backend.spec = spec
    return backend
