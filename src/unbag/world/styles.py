"""unbag's worlds by name (declared in world/worlds/), the one that names without a world in them
mean, and the `NAME@WORLD` spelling every spec that names a world uses.

The unqualified names — the `ctrl` and `ctrl-retrieval` benchmarks, `world[:DIST]` streams,
`swaps` features and `--select ctrl-id` — name the DEFAULT world; `ctrl@flat`, `world@3d:DIST`,
`swaps@flat`, `ctrl-id@3d` name one explicitly, so that a script says which it means and keeps
meaning it when the default moves (docs/world3d.md).
"""
from __future__ import annotations

from ..errors import UnbagError
from .worlds import World, declared

WORLDS: dict[str, World] = declared()
STYLES = tuple(WORLDS)
DEFAULT = "3d"
SIZES = {name: w.px for name, w in WORLDS.items()}

# the spellings before NAME@WORLD, refused with the one to write instead
RENAMED = {"world-flat": "world@flat", "world3d": "world@3d", "swaps-flat": "swaps@flat", "swaps3d": "swaps@3d",
           "ctrl-flat-id": "ctrl-id@flat", "ctrl3d-id": "ctrl-id@3d"}


def resolve(style: str | None) -> str:
    """The world a style names: the default for None; an unknown one is an error naming both."""
    if style is None:
        return DEFAULT
    if style not in WORLDS:
        raise UnbagError(f"world {style!r}: one of {', '.join(STYLES)}")
    return style


def world(style: str | None) -> World:
    """The declaration of a world (None: the default world)."""
    return WORLDS[resolve(style)]


def size(style: str | None) -> int:
    """The side in pixels a world's pictures are drawn at by default (None: the default world)."""
    return world(style).px


def split_world(spec: str, names: tuple[str, ...] | dict, what: str) -> tuple[str, str | None, str]:
    """(name, world or None, rest) of `NAME[@WORLD][:REST]` where NAME is one of `names`; None when
    NAME is not one of them. An old spelling (world3d:, swaps-flat, ...) is refused naming the new
    one; an unknown world, naming the worlds."""
    head, colon, rest = spec.partition(":")
    name, at, style = head.partition("@")
    if name in RENAMED and not at:
        new = RENAMED[name] + (colon + rest)
        raise UnbagError(f"{what} {spec!r}: now spelled {new!r} (NAME@WORLD)")
    if name not in names:
        return None  # type: ignore[return-value]
    if at:
        if style not in WORLDS:
            raise UnbagError(f"{what} {spec!r}: unknown world {style!r}; one of {', '.join(STYLES)}")
        return name, style, rest
    return name, None, rest


def render_procs() -> int:
    """Processes that render 3D pictures by default: the machine's cores, at most 8 (the same
    bytes for any number: each picture is drawn on one torch thread)."""
    import os
    return max(1, min(os.cpu_count() or 1, 8))


MIN_PX = 16  # the smallest picture side a world draws (a few pixels an object below it)
MAX_PX = 1024  # the largest: a 3D render holds several float buffers of side^2 (40 GB at 100,000 px)


def check_render(px: int, procs: int | None = None, seed: int = 0) -> int:
    """Refuse a picture side outside [MIN_PX, MAX_PX], a negative seed and a process count below
    1; cap the processes at the machine's cores (more only wait for them), with a warning. The processes."""
    import os

    from ..errors import warn
    from ..utils import at_least
    at_least("size", px, MIN_PX)
    if px > MAX_PX:
        from ..errors import UnbagError
        raise UnbagError(f"--size {px}: at most {MAX_PX} px (a picture's render buffers grow with its side squared; "
                         "the models this world is for read 224 to 448 px)")
    at_least("seed", seed, 0)
    if procs is None:
        return 1
    at_least("procs", procs, 1)
    cores = os.cpu_count() or 1
    if procs > cores:
        warn(f"--procs {procs}: this machine has {cores} core(s); rendering over {cores} process(es)")
        return cores
    return procs
