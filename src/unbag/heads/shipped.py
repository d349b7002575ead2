"""Heads shipped with unbag for the built-in model and its shipped fine-tuned copies."""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError

HEADS_DIR = Path(__file__).resolve().parent.parent / "weights" / "heads"


def shipped_head(protocol: str, model_spec: str) -> str:
    """'head:builtin:KIND' -> 'head:DIR' of the head shipped for this built-in model (other
    protocols unchanged): `unbag eval` and plans resolve it the same way."""
    if not protocol.startswith("head:builtin:"):
        return protocol
    kind = protocol[len("head:builtin:"):]
    if model_spec == "builtin":
        name = "pretrained"
    elif model_spec.startswith("builtin:"):
        name = model_spec[len("builtin:"):]
    else:
        raise UnbagError(f"protocol {protocol}: shipped heads exist only for built-in models, not {model_spec!r}; "
                         "train a head (unbag features + unbag train --method tflocal) and use head:DIR")
    d = HEADS_DIR / kind / name
    if not (d / "head.json").is_file():
        raise UnbagError(f"protocol {protocol}: no shipped {kind} head for {model_spec} at {d}")
    return f"head:{d}"
