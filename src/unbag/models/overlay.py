"""Small shipped checkpoints: only the tensors a method changed, over a named base model.

A fine-tuned copy of the built-in model is 14 MB in fp32; an overlay keeps the tensors that differ
from its base (CLIC: the text tower and logit scale only) in fp16, and `load` rebuilds the model
by loading the base and copying them in. The fp16 rounding moves the ctrl scores by well under a
point (measured in weights/methods/README.md).

Most of a fine-tuned token-embedding table does not change: rows of tokens the training data
never uses only shrink by AdamW's weight decay, the same factor for every row. Such a tensor is
stored as that scale, the rows that really changed, and the few fp16 values where base x scale
rounds differently from the fine-tuned value; `unpack` rebuilds exactly the fp16 tensor a dense
overlay would hold (same weights, same scores, bit for bit), from about a tenth of the bytes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..errors import UnbagError
from ..utils import atomic_dir

ROW_TOL = 1e-4  # a row whose values leave base x scale by more than this is stored whole


def _rescaled(base: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """base x scale rounded to fp16, computed the same way when packing and unpacking (CPU, fp32)."""
    return (base.detach().cpu().float() * scale.float()).half()


def pack(tuned: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Safetensors entries for the tensors of `tuned` that differ from `base`: fp16 `name`, or for
    a large matrix that is mostly base x one scale: `name::scale`, `name::rows`, `name::row_values`,
    `name::fix_index`, `name::fix_values` (whichever is smaller)."""
    out = {}
    for k, v in tuned.items():
        v = v.detach().cpu().contiguous()
        if torch.equal(v, base[k].detach().cpu()):
            continue
        if not v.is_floating_point():
            out[k] = v
            continue
        dense = v.half()
        out[k] = dense
        if v.ndim != 2 or v.shape[0] < 1024:
            continue
        b = base[k].detach().cpu().float()
        scale = ((v.float() * b).sum() / (b * b).sum().clamp_min(1e-12)).reshape(1)
        rows = torch.nonzero((v.float() - b * scale).abs().amax(1) > ROW_TOL)[:, 0]
        rec = _rescaled(b, scale)
        rec[rows] = dense[rows]
        fix = torch.nonzero((rec != dense).reshape(-1))[:, 0].to(torch.int32)
        sparse = {f"{k}::scale": scale, f"{k}::rows": rows.to(torch.int32), f"{k}::row_values": dense[rows],
                  f"{k}::fix_index": fix, f"{k}::fix_values": dense.reshape(-1)[fix.long()]}
        if sum(t.numel() * t.element_size() for t in sparse.values()) < dense.numel() * dense.element_size() // 2:
            del out[k]
            out.update(sparse)
    return out


def unpack(state: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The overlay's tensors by name, rebuilt from `pack`'s entries and the base's tensors."""
    out = {k: v for k, v in state.items() if "::" not in k}
    for k in {k.split("::")[0] for k in state if "::" in k}:
        if k not in base:
            raise UnbagError(f"overlay tensor {k!r} is not in the base model")
        rec = _rescaled(base[k], state[f"{k}::scale"])
        rec[state[f"{k}::rows"].long()] = state[f"{k}::row_values"]
        rec.view(-1)[state[f"{k}::fix_index"].long()] = state[f"{k}::fix_values"]
        out[k] = rec
    return out


def save_overlay(model: str, base: str, out: str | os.PathLike, meta: dict | None = None) -> Path:
    """Write the tensors of model `model` that differ from `base` (both specs) to folder `out`."""
    from . import load

    tuned, ref = load(model).model.state_dict(), load(base).model.state_dict()
    if set(tuned) != set(ref):
        raise UnbagError(f"{model} and {base} do not have the same tensors")
    state = pack(tuned, ref)
    names = {k.split("::")[0] for k in state}
    with atomic_dir(out) as tmp:
        save_file(state, str(tmp / "weights.safetensors"))
        (tmp / "overlay.json").write_text(json.dumps({
            "base": base, "dtype": "float16", "tensors": len(names),
            "parameters": int(sum(ref[k].numel() for k in names)),
            "sparse": sorted(k.split("::")[0] for k in state if k.endswith("::scale")), **(meta or {})},
            indent=2) + "\n")
    return Path(out)


def load_overlay(path: Path, spec: str, device: str | torch.device = "cpu"):
    """The base model of an overlay folder with its tensors replaced."""
    from . import load

    info = json.loads((path / "overlay.json").read_text())
    backend = load(info["base"], device=device)
    own = backend.model.state_dict()
    state = unpack(load_file(str(path / "weights.safetensors")), own)
    unknown = set(state) - set(own)
    if unknown:
        raise UnbagError(f"{path}/weights.safetensors: tensors {sorted(unknown)[:3]} are not in {info['base']}")
    with torch.no_grad():
        for k, v in state.items():
            own[k].copy_(v.to(own[k].dtype))
    backend.spec = spec
    return backend
