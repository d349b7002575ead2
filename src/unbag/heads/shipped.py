"""Heads shipped with unbag for the built-in model and its shipped fine-tuned copies."""
from __future__ import annotations

from pathlib import Path

from ..errors import UnbagError

HEADS_DIR = Path(__file__).resolve().parent.parent / "weights" / "heads"


def shipped_dir(arg: str) -> Path | None:
    """The folder of a shipped head named 'builtin:KIND@NAME' (a head protocol's argument), else None."""
    if not arg.startswith("builtin:") or "@" not in arg:
        return None
    kind, _, name = arg[len("builtin:"):].partition("@")
    d = HEADS_DIR / kind / name
    if "/" in kind + name or not (d / "head.json").is_file():
        raise UnbagError(f"head:{arg}: no such shipped head (KIND@NAME, e.g. tflocal@pretrained)")
    return d


def shipped_head(protocol: str, model_spec: str) -> str:
    """'head:builtin:KIND' -> 'head:builtin:KIND@NAME', the head shipped for this built-in model
    (other protocols unchanged): `unbag eval` and plans resolve it the same way, and results record
    it by name (with its weights' hash), never by the path of this checkout, so they stay valid
    when the checkout moves."""
    if not protocol.startswith("head:builtin:"):
        return protocol
    kind = protocol[len("head:builtin:"):]
    if "@" in kind:  # already resolved
        return protocol
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
    return f"head:builtin:{kind}@{name}"
