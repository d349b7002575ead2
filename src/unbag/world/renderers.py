"""Which renderer draws each world, and its version: what a generated benchmark records of how it
was drawn (a result that recorded another was drawn by another renderer, and is made again)."""
from __future__ import annotations

from .styles import resolve


def render_version(style: str | None) -> int:
    """The renderer version of a world (None: the default world); the renderers are imported here,
    not in styles.py, which they read their picture sizes from."""
    if resolve(style) == "3d":
        from .render3d import RENDER_VERSION as version
    else:
        from .render import RENDER_VERSION as version
    return version
