"""Maintainer tooling: pack a trained model into the folders the package ships
(src/unbag/weights/): the built-in model (`save_builtin`, and `resize_builtin` for a run that goes on
at another image size) and a method's overlay over it (`save_overlay`). The storage formats are
models/overlay.py's; the recipes that call these: weights/builtin/TRAINING.md, weights/methods/README.md.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import save, save_file

from .errors import UnbagError
from .models import load
from .models.overlay import pack, pack_builtin
from .utils import atomic_dir, atomic_write, read_json, read_safetensors


def save_overlay(model: str, base: str, out: str | os.PathLike, meta: dict | None = None) -> Path:
    """Write the tensors of model `model` that differ from `base` (both specs) to folder `out`."""
    tuned, ref = load(model).model.state_dict(), load(base).model.state_dict()
    if set(tuned) != set(ref):
        raise UnbagError(f"{model} and {base} do not have the same tensors")
    state = pack(tuned, ref)
    names = {k.split("::")[0] for k in state}
    with atomic_dir(out, "model", overwrite=True) as tmp:
        save_file(state, str(tmp / "weights.safetensors"))
        (tmp / "overlay.json").write_text(json.dumps({
            "base": base, "dtype": "float16", "tensors": len(names),
            "parameters": int(sum(ref[k].numel() for k in names)),
            "sparse": sorted(k.split("::")[0] for k in state if k.endswith("::scale")), **(meta or {})},
            indent=2) + "\n")
    return Path(out)


def save_builtin(run: str | os.PathLike, init_spec: str, seed: int, out: str | os.PathLike) -> Path:
    """Pack the model a `unbag train` run wrote to `run/model` (trained from `init_spec` under
    torch seed `seed`, which rebuilds its initial weights) into `out/weights.safetensors`, with
    its open_clip config beside it; `out`'s other files are left alone."""
    trained = read_safetensors(Path(run) / "model" / "open_clip_model.safetensors")
    torch.manual_seed(seed)  # as the trainer did before building the model
    init = load(init_spec).model.state_dict()
    out = Path(out)
    atomic_write(out / "weights.safetensors", save(pack_builtin(trained, init)))
    atomic_write(out / "open_clip_config.json", (Path(run) / "model" / "open_clip_config.json").read_bytes())
    return out


def resize_builtin(src: str | os.PathLike, image_size: int, out: str | os.PathLike) -> Path:
    """The built-in model folder `src` at another image size, written to folder `out`: its config
    with `image_size` replaced and the position embeddings resized to the new token grid by
    open_clip's bicubic interpolation; every other tensor as stored. The start of a run that goes on
    at the new size, as CLIP's ViT-L/14@336px went on from 224 px (Radford et al., arXiv 2103.00020)."""
    from open_clip.model import resize_pos_embed

    from .models.openclip import OpenCLIPBackend

    src, out = Path(src), Path(out)
    cfg = read_json(src / "open_clip_config.json")
    vision = cfg["model_cfg"]["vision_cfg"]
    cfg.setdefault("unbag", {})["resized_from"] = {"folder": str(src), "image_size": vision["image_size"]}
    vision["image_size"] = image_size
    state = read_safetensors(src / "weights.safetensors")
    with atomic_dir(out, "model", overwrite=True) as tmp:
        (tmp / "open_clip_config.json").write_text(json.dumps(cfg, indent=2) + "\n")
        model = OpenCLIPBackend.unloaded(f"{out}", tmp).model
        resize_pos_embed(state, model)  # in place; a no-op at the same size
        if state["visual.positional_embedding"].shape != model.visual.positional_embedding.shape:
            raise UnbagError(f"{src}: position embeddings {tuple(state['visual.positional_embedding'].shape)} "
                             f"cannot be resized to {tuple(model.visual.positional_embedding.shape)}")
        save_file(state, str(tmp / "weights.safetensors"))
    return out
