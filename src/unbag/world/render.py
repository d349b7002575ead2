"""Render scenes to RGB arrays: flat 'rubber' vs shaded, highlighted 'metal' objects on noisy grey."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from .scene import COLORS, Obj, Scene

BACKGROUND = (118, 118, 118)
# Bumped whenever the same scene renders to other pixels; generated benchmarks and ctrl folders
# record it, and `unbag run` redoes a cell scored on other pixels. 2 (2026-12-01): cubes fill their
# square (at 0.85 of it a small cube and a small sphere were 9 px square vs 11 px disc).
RENDER_VERSION = 2
SUPERSAMPLE = 4  # drawn at 4x and box-downsampled for anti-aliased edges


def _outline(shape: str, cx: float, cy: float, r: float) -> tuple[str, list[tuple[float, float]]]:
    """('ellipse' | 'polygon', points) for a shape of half-extent r centred at (cx, cy)."""
    if shape == "sphere":
        return "ellipse", [(cx - r, cy - r), (cx + r, cy + r)]
    if shape == "cube":
        h = r
        return "polygon", [(cx - h, cy - h), (cx + h, cy - h), (cx + h, cy + h), (cx - h, cy + h)]
    if shape == "cylinder":
        w = 0.62 * r
        return "polygon", [(cx - w, cy - r), (cx + w, cy - r), (cx + w, cy + r), (cx - w, cy + r)]
    if shape == "cone":
        return "polygon", [(cx, cy - r), (cx + r, cy + r), (cx - r, cy + r)]
    if shape == "star":
        pts = []
        for k in range(10):
            rad = r if k % 2 == 0 else 0.45 * r
            a = -np.pi / 2 + k * np.pi / 5
            pts.append((cx + rad * np.cos(a), cy + rad * np.sin(a)))
        return "polygon", pts
    raise ValueError(f"unknown shape {shape!r}")


def _draw(d: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill) -> None:
    kind, pts = _outline(shape, cx, cy, r)
    (d.ellipse if kind == "ellipse" else d.polygon)(pts, fill=fill)


def _scale(rgb, f: float) -> tuple[int, int, int]:
    return tuple(int(min(255, max(0, round(c * f)))) for c in rgb)


# Where the metal highlight sits, relative to the centre in units of r (inside every shape).
_HIGHLIGHT = {"sphere": (-0.35, -0.35), "cube": (-0.35, -0.35), "cylinder": (-0.2, -0.45),
              "cone": (-0.1, 0.25), "star": (-0.1, -0.1)}


def draw_object(d: ImageDraw.ImageDraw, o: Obj, px: int) -> None:
    """Draw one object on a canvas of side px."""
    cx, cy, r = o.x * px, o.y * px, o.radius * px
    base = COLORS[o.color]
    if o.material == "rubber":
        _draw(d, o.shape, cx, cy, r, base)
        return
    # metal: dark rim, bright body, specular highlight
    _draw(d, o.shape, cx, cy, r, _scale(base, 0.55))
    _draw(d, o.shape, cx, cy, 0.72 * r, _scale(base, 1.15))
    hx, hy = _HIGHLIGHT[o.shape]
    hr = 0.2 * r
    d.ellipse([(cx + hx * r - hr, cy + hy * r - hr), (cx + hx * r + hr, cy + hy * r + hr)],
              fill=(250, 250, 250))


def render(scene: Scene, px: int = 64) -> np.ndarray:
    """RGB uint8 array [px, px, 3] of the scene; deterministic in the scene and its seed."""
    big = px * SUPERSAMPLE
    canvas = Image.new("RGB", (big, big), BACKGROUND)
    d = ImageDraw.Draw(canvas)
    for o in scene.objects:
        draw_object(d, o, big)
    img = np.asarray(canvas.resize((px, px), Image.Resampling.BOX), dtype=np.int16)
    noise = np.random.default_rng(scene.seed).normal(0.0, 6.0, size=(px, px, 1))
    return np.clip(img + np.round(noise), 0, 255).astype(np.uint8)


def render_version(px: int) -> int:
    """The version of the pixels drawn at side px: the same at every side."""
    return RENDER_VERSION
