"""unbag's two worlds, and the one that names without a world in them mean.

`flat`: 2D shapes on grey (world/scene.py, render.py); `3d`: CLEVR-faithful scenes (scene3d.py,
render3d.py; docs/world3d.md). The unqualified names — the `ctrl` and `ctrl-retrieval`
benchmarks, `world[:DIST]` streams, `swaps` features and `--select ctrl-id` — name the DEFAULT
world; `ctrl@flat` / `ctrl@3d`, `world-flat:` / `world3d:`, `swaps-flat` / `swaps3d` and
`ctrl-flat-id` / `ctrl3d-id` name one explicitly, so that a script says which it means and keeps
meaning it when the default moves (docs/world3d.md).
"""
from __future__ import annotations

from ..errors import UnbagError

STYLES = ("flat", "3d")
DEFAULT = "3d"
# the side in pixels a world's pictures are drawn at unless asked otherwise: the input size of the
# built-in model of that world (3D: 96 px since 2026-12-06, where a small object is wide enough for
# its shape to be read and counted; docs/log.md)
PX_FLAT, PX_3D = 64, 96
SIZES = {"flat": PX_FLAT, "3d": PX_3D}


def resolve(style: str | None) -> str:
    """The world a style names: the default for None; an unknown one is an error naming both."""
    if style is None:
        return DEFAULT
    if style not in STYLES:
        raise UnbagError(f"world {style!r}: one of {', '.join(STYLES)}")
    return style


def size(style: str | None) -> int:
    """The side in pixels a world's pictures are drawn at by default (None: the default world)."""
    return SIZES[resolve(style)]


def render_procs() -> int:
    """Processes that render 3D pictures by default: the machine's cores, at most 8 (the same
    bytes for any number: each picture is drawn on one torch thread)."""
    import os
    return max(1, min(os.cpu_count() or 1, 8))


MIN_PX = 16  # the smallest picture side a world draws (a few pixels an object below it)


def check_render(px: int, procs: int | None = None, seed: int = 0) -> int:
    """Refuse a picture side below MIN_PX, a negative seed and a process count below 1; cap the
    processes at the machine's cores (more only wait for them), with a warning. The processes."""
    import os

    from ..errors import warn
    from ..utils import at_least
    at_least("size", px, MIN_PX)
    at_least("seed", seed, 0)
    if procs is None:
        return 1
    at_least("procs", procs, 1)
    cores = os.cpu_count() or 1
    if procs > cores:
        warn(f"--procs {procs}: this machine has {cores} core(s); rendering over {cores} process(es)")
        return cores
    return procs
