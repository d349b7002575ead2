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

The built-in model itself (`pack_builtin`) is stored the same way in fp32, over no base: 49 of its
49,408 token rows were trained (the tokens of the world's captions); every other row is its random
initial value times the weight-decay factor and is never read by any text the model was trained
or is evaluated on. Those rows are redrawn at load from a fixed seed with numpy's `RandomState`
(whose stream numpy keeps fixed across versions), so they are still random rows at the same
scale, now 12 MB lighter; every tensor a world caption or image reaches is stored exactly.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..errors import UnbagError
from ..utils import read_json, read_safetensors
from .base import Backend, Form

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "weights" / "builtin"
BUILTIN_WEIGHTS = BUILTIN_DIR / "weights.safetensors"  # packed (`pack_builtin`; shipping.py)
METHODS_DIR = Path(__file__).resolve().parent.parent / "weights" / "methods"

ROW_TOL = 1e-4  # a row whose values leave base x scale by more than this is stored whole


def _rescaled(base: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """base x scale rounded to `dtype`, computed the same way when packing and unpacking (CPU, fp32)."""
    return (base.detach().cpu().float() * scale.float()).to(dtype)


def seeded_normal(shape: tuple[int, ...], seed: int, std: float) -> torch.Tensor:
    """float32 draws of N(0, std^2) from numpy's legacy RandomState(seed), whose stream is frozen
    across numpy versions: the same tensor on every machine."""
    return torch.from_numpy(np.random.RandomState(seed).standard_normal(shape) * std).float()


def _large(v: torch.Tensor) -> bool:
    """A matrix worth storing as a factor and its changed rows (a token table)."""
    return v.is_floating_point() and v.ndim == 2 and v.shape[0] >= 1024


def _fit_decay(v: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the one factor [1] that maps fp32 rows `b` onto `v`, the rows of `v` it leaves off by more than ROW_TOL)."""
    scale = ((v * b).sum() / (b * b).sum().clamp_min(1e-12)).reshape(1)
    return scale, torch.nonzero((v - b * scale).abs().amax(1) > ROW_TOL)[:, 0]


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
        if not _large(v):
            continue
        b = base[k].detach().cpu().float()
        scale, rows = _fit_decay(v.float(), b)
        rec = _rescaled(b, scale)
        rec[rows] = dense[rows]
        fix = torch.nonzero((rec != dense).reshape(-1))[:, 0].to(torch.int32)
        sparse = {f"{k}::scale": scale, f"{k}::rows": rows.to(torch.int32), f"{k}::row_values": dense[rows],
                  f"{k}::fix_index": fix, f"{k}::fix_values": dense.reshape(-1)[fix.long()]}
        if sum(t.numel() * t.element_size() for t in sparse.values()) < dense.numel() * dense.element_size() // 2:
            del out[k]
            out.update(sparse)
    return out


def pack_builtin(trained: dict[str, torch.Tensor], init: dict[str, torch.Tensor],
                 seed: int = 0) -> dict[str, torch.Tensor]:
    """Safetensors entries of a model trained from scratch from `init`: every tensor in fp32, but a
    large matrix most of whose rows only shrank by weight decay is stored as `name::seed`,
    `name::std`, `name::scale` and its trained `name::rows` / `name::row_values`."""
    out = {}
    for k, v in trained.items():
        v = v.detach().cpu().contiguous()
        out[k] = v
        if not _large(v):
            continue
        b = init[k].detach().cpu().float()
        v32 = v.float()
        _, rows = _fit_decay(v32, b)
        rest = torch.ones(len(v), dtype=torch.bool)
        rest[rows] = False
        if rest.sum() < len(v) // 2:
            continue
        # refit the factor on the untrained rows alone: the trained ones pull it off
        scale = ((v32[rest] * b[rest]).sum() / (b[rest] * b[rest]).sum()).reshape(1)
        del out[k]
        out.update({f"{k}::seed": torch.tensor([seed], dtype=torch.int64),
                    f"{k}::std": b[rest].std().reshape(1), f"{k}::scale": scale,
                    f"{k}::rows": rows.to(torch.int32), f"{k}::row_values": v[rows]})
    return out


def unpack(state: dict[str, torch.Tensor], base: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The stored tensors by name, rebuilt from `pack`'s (or `pack_builtin`'s) entries and the
    base's tensors (for `pack_builtin`, only their shapes)."""
    out = {k: v for k, v in state.items() if "::" not in k}
    for k in {k.split("::")[0] for k in state if "::" in k}:
        if k not in base:
            raise UnbagError(f"stored tensor {k!r} is not in the base model")
        values = state[f"{k}::row_values"]
        if f"{k}::seed" in state:
            start = seeded_normal(tuple(base[k].shape), int(state[f"{k}::seed"]), float(state[f"{k}::std"]))
        else:
            start = base[k]
        rec = _rescaled(start, state[f"{k}::scale"], values.dtype)
        rec[state[f"{k}::rows"].long()] = values
        if f"{k}::fix_index" in state:
            rec.view(-1)[state[f"{k}::fix_index"].long()] = state[f"{k}::fix_values"]
        out[k] = rec
    return out


def _copy_in(backend, state: dict[str, torch.Tensor], path: Path) -> None:
    own = backend.model.state_dict()
    unknown = set(state) - set(own)
    if unknown:
        raise UnbagError(f"{path}: tensors {sorted(unknown)[:3]} are not in the model {backend.spec}")
    with torch.no_grad():
        for k, v in state.items():
            own[k].copy_(v.to(own[k].dtype))


def load_builtin(path: Path, spec: str, device: str | torch.device = "cpu"):
    """The built-in model from its folder: open_clip config + `pack_builtin` weights."""
    from .openclip import OpenCLIPBackend

    backend = OpenCLIPBackend.unloaded(spec, path, device=device)
    _copy_in(backend, unpack(read_safetensors(path / "weights.safetensors"), backend.model.state_dict()),
             path / "weights.safetensors")
    return backend


def load_overlay(path: Path, spec: str, load, device: str | torch.device = "cpu"):
    """The base model of an overlay folder with its tensors replaced; `load` loads the base by its
    spec (models.load, passed in: this module is below the registry)."""
    info = read_json(path / "overlay.json")
    if not isinstance(info, dict) or not isinstance(info.get("base"), str):
        raise UnbagError(f"{path / 'overlay.json'}: field 'base' (the model the overlay applies to) is missing")
    backend = load(info["base"], device=device)
    _copy_in(backend, unpack(read_safetensors(path / "weights.safetensors"), backend.model.state_dict()),
             path / "weights.safetensors")
    backend.spec = spec
    return backend


def _check_builtin(rest: str) -> None:
    if rest and not (METHODS_DIR / rest / "overlay.json").is_file():
        have = sorted(p.name for p in METHODS_DIR.glob("*") if (p / "overlay.json").is_file())
        raise UnbagError(f"builtin:{rest}: no shipped checkpoint {rest!r}; available: {', '.join(have) or 'none'}")


def _builtin(spec: str, rest: str, device=None) -> Backend:
    """`builtin` (the packed built-in model) or `builtin:METHOD` (a shipped overlay over it)."""
    if not BUILTIN_WEIGHTS.is_file():
        raise UnbagError(f"builtin: weights missing at {BUILTIN_WEIGHTS} (see src/unbag/weights/"
                         "builtin/TRAINING.md for the command that trains them)")
    if not rest:
        return load_builtin(BUILTIN_DIR, spec, device)
    _check_builtin(rest)

    def base(name: str, device=None):
        if name != "builtin":
            raise UnbagError(f"{METHODS_DIR / rest / 'overlay.json'}: a shipped overlay is over 'builtin', not {name!r}")
        return load_builtin(BUILTIN_DIR, name, device)
    return load_overlay(METHODS_DIR / rest, spec, base, device)


MODELS = {"builtin": Form("builtin | builtin:METHOD (the shipped fine-tuned copies: "
                          "weights/methods/README.md)", _builtin, _check_builtin)}
