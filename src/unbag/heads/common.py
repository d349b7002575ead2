"""What every alignment head shares: its config, the registry, the base class that declares what a
head reads, text and image inputs from cache fields, and the match loss.

A head is one file: a `Head` subclass with its `name`, declared in the file's module-level
`HEADS = {NAME: CLASS}` table (collected by `heads()`), that declares what it attends to
(`attends`), the options it takes (`min_layers`, `calibrates`) and, where it has them, the
features it needs beyond the cache (`bench_fields`) and what it adds to its scores (`extra_scores`,
`recorded`) (CONTRIBUTING.md).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UnbagError
from ..utils import collect

if TYPE_CHECKING:
    from ..benchmarks.base import Benchmark


@dataclass
class HeadConfig:
    """Architecture of an alignment head (saved with its checkpoint). A field with `help` is a
    `unbag train` flag of its own (`--NAME`); the others follow from the feature cache."""
    kind: str = "tflocal"  # a registered head's name (`heads()`)
    # phrases (each phrase encoded alone) | tokens (the whole caption's tokens)
    text: str = field(default="phrases", metadata={"help": "heads: phrases (default; each encoded alone) | tokens"})
    dim: int = 64  # joint-space width of the frozen backbone
    width: int = field(default=64, metadata={"help": "heads: transformer width (64)"})
    layers: int = field(default=1, metadata={"help": "heads: layers (1)"})
    heads: int = field(default=4, metadata={"help": "heads: attention heads per layer (4)"})
    patches: int = 64  # number of image tokens the head attends to (patches or regions)
    # patch heads: attend to first-block patches as well as final ones
    early: bool = field(default=False, metadata={"help": "tflocal: attend to first-block patches too"})
    # heads that calibrate, when scoring: each phrase's score less its closest one-word change's
    calibrate: bool = field(default=False, metadata={"help": "tflocal-li: each phrase's score less its closest "
                                                             "one-word change's (docs/heads.md)"})


class Head(nn.Module):
    """An alignment head over frozen features: (image, text) pairs -> one match score each."""
    name = ""  # its registered name (`--method`, `head:builtin:NAME`)
    # its image tokens: "patches" (final-layer patches, plus first-block ones with `early`),
    # "regions" (SGI's region embeddings, with their sizes) or None (the global image vector only)
    attends: str | None = "patches"
    min_layers = 1  # the fewest `layers` it can be built with
    calibrates = False  # takes `calibrate` (each phrase scored against its one-word alternatives)
    recipe = "paper"  # "paper": a paper's head (TFGlobal; TFLocal over tokens, `recipe_of`); "unbag": unbag's own

    @classmethod
    def recipe_of(cls, head: dict) -> str:
        """Whose recipe a trained head is, "paper" or "unbag", given its recorded config."""
        return cls.recipe

    @classmethod
    def check_config(cls, cfg: HeadConfig) -> None:
        """Refuse options this head cannot take (the CLI's flag names in the messages)."""
        if cfg.layers < cls.min_layers:
            raise UnbagError(f"--layers {cfg.layers}: head {cls.name} needs at least {cls.min_layers} layer(s)")
        if cfg.calibrate and not (cls.calibrates and cfg.text == "phrases"):
            calibrating = ", ".join(n for n, h in heads().items() if h.calibrates)
            raise UnbagError(f"--calibrate is for {calibrating} over phrases: it scores each phrase against its "
                             "alternatives")

    def bench_fields(self, backend, bench, images: list[int], batch_size: int, cache=None) -> dict:
        """Fields a benchmark's distinct images (`images`: indices into its flat image list) need
        beyond the frozen encoder features every head shares ({} for most heads); `cache` is the
        job's JobCache."""
        return {}

    def extra_scores(self, backend, bench, batch_size: int, cache=None) -> torch.Tensor | None:
        """What this head adds to its scores [items, images, captions] on a benchmark (None:
        nothing); `cache` is the job's JobCache."""
        return None

    @classmethod
    def recorded(cls, bench: "str | Benchmark") -> dict:
        """What a result scored with this head records beyond the head's own config."""
        return {}


@functools.cache
def heads() -> dict[str, type[Head]]:
    """Every head: the module-level `HEADS` tables of this package's files (one file per head)."""
    return collect(__package__, "HEADS")


def head_class(kind: str) -> type[Head]:
    """The registered head of a name."""
    if kind not in heads():
        raise UnbagError(f"unknown head {kind!r}; available: {', '.join(heads())}")
    return heads()[kind]


def text_inputs(fields: dict, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(text vectors [N, T, D], mask [N, T]) of a batch of cache rows for the head's text mode."""
    if text == "phrases":
        return fields["phr_global"], fields["phr_mask"]
    if text == "tokens":
        return fields["txt_tokens"], fields["txt_mask"]
    raise ValueError(f"unknown head text mode {text!r}")


def head_inputs(fields: dict, cfg: HeadConfig) -> tuple[dict, dict]:
    """(image inputs, text inputs) of a head from feature fields: keyword arguments of its forward."""
    text, mask = text_inputs(fields, cfg.text)
    img = {"img_global": fields["img_global"], "tokens": image_tokens(fields, cfg), "tok_size": fields.get("reg_size")}
    txt = {"text": text, "mask": mask, "want": fields.get("phr_want")}
    if cfg.calibrate:
        txt |= {"alt": fields["phr_alt"], "alt_mask": fields["phr_alt_mask"]}
    return img, txt


def match_loss(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """CE of the positive (column 0) against its candidates; invalid candidates are masked out."""
    scores = scores.masked_fill(~valid, float("-inf"))
    return F.cross_entropy(scores, torch.zeros(len(scores), dtype=torch.long, device=scores.device))


def image_tokens(fields: dict, cfg: HeadConfig) -> torch.Tensor | None:
    """The image tokens a head attends to: SGI regions, or final-layer patches plus first-block
    ones with early; None for a head of the global vector."""
    attends = head_class(cfg.kind).attends
    if attends is None:
        return None
    if attends == "regions":
        return fields["img_regions"]
    if not cfg.early:
        return fields["img_patches"]
    if "img_patches_early" not in fields:
        raise ValueError("this head attends to early patches but the features have none "
                         "(rebuild the cache with this unbag version)")
    return torch.cat([fields["img_patches"], fields["img_patches_early"]], 1)


def token_count(index: dict, cfg: HeadConfig) -> int:
    """How many image tokens a head attends to, from a feature cache's field shapes."""
    if head_class(cfg.kind).attends == "regions":
        return index["img_regions"]["shape"][0]
    return index["img_patches"]["shape"][0] * (2 if cfg.early else 1)


def image_fields(cfg: HeadConfig) -> list[str]:
    """Cache fields a head reads for images."""
    attends = head_class(cfg.kind).attends
    if attends == "regions":
        return ["img_global", "img_regions", "reg_size"]
    if attends == "patches":
        return ["img_global", "img_patches"] + (["img_patches_early"] if cfg.early else [])
    return ["img_global"]


def text_fields(cfg: HeadConfig) -> list[str]:
    """Cache fields a head reads for texts (regions heads: how many boxes each phrase's region joins)."""
    if cfg.text == "tokens":
        return ["txt_tokens", "txt_mask"]
    return (["phr_global", "phr_mask"] + (["phr_want"] if head_class(cfg.kind).attends == "regions" else [])
            + (["phr_alt", "phr_alt_mask"] if cfg.calibrate else []))
