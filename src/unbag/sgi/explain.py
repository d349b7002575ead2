"""`unbag explain`: which region each caption segment chose under SGI, drawn and tabulated."""
from __future__ import annotations

import functools
import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont
from rich.table import Table

from ..benchmarks.base import Benchmark, Item, load_image
from ..errors import UnbagError
from ..utils import atomic_write, check_file_out, drawn_by_unbag as drawn_by, png_marked
from .config import SGIConfig
from .protocol import score_sgi
from .regions import framed

PALETTE = [(230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180),
           (70, 240, 240), (240, 50, 230), (210, 245, 60)]
PANEL = 256


def drawn_by_unbag(path: Path) -> bool:
    """Whether a file is an explanation image unbag drew (a PNG carrying its mark)."""
    return drawn_by(path, "explain")


LATIN_END = 0x250  # Pillow's default font draws Latin, Latin-1 and Latin Extended; others need a fallback


@functools.lru_cache(maxsize=None)
def _fallback(ch: str, size: int) -> "ImageFont.FreeTypeFont | None":
    """An installed font with a glyph for `ch` (fontconfig's list; CJK, emoji...), or None."""
    try:
        listed = subprocess.run(["fc-list", f":charset={ord(ch):x}", "file"], capture_output=True, text=True,
                                timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for f in sorted(ln.split(":")[0].strip() for ln in listed.splitlines() if ln.strip()):
        try:
            return ImageFont.truetype(f, size)
        except OSError:  # e.g. a colour-bitmap emoji font, which draws at fixed sizes only
            continue
    return None


def _runs(text: str, font) -> list[tuple[str, object]]:
    """`text` split into runs of one font each: the default font, or a fallback that has the glyph."""
    runs: list[tuple[str, object]] = []
    for ch in text:
        f = font if ord(ch) < LATIN_END or ch.isspace() else (_fallback(ch, int(font.size)) or font)
        if runs and runs[-1][1] is f:
            runs[-1] = (runs[-1][0] + ch, f)
        else:
            runs.append((ch, f))
    return runs


def _length(text: str, font) -> float:
    return sum(f.getlength(t) for t, f in _runs(text, font))


def _text(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, fill, font) -> None:
    """Draw text run by run, each in a font that has its glyphs (no boxes for CJK or emoji)."""
    x, y = xy
    for t, f in _runs(text, font):
        draw.text((x, y), t, fill=fill, font=f)
        x += f.getlength(t)


def _wrap(text: str, font, px: int) -> list[str]:
    """Lines of whole words no wider than px in this font (a longer single word gets its own line)."""
    lines: list[str] = []
    for word in text.split():
        if lines and _length(lines[-1] + " " + word, font) <= px:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _panel(img: Image.Image, d: dict, score: float, caption: str, font) -> Image.Image:
    sx, sy = PANEL / img.width, PANEL / img.height
    said = [(caption, "black"), (f"score {score:.4f}", "black")] + [
        (f"[{k}] {t} ({kind}): {s:.3f}", PALETTE[k % len(PALETTE)])
        for k, ((t, kind), s) in enumerate(zip(d["segments"], d["sims"]))]
    # wrapped to the panel's width, never cut: the whole caption and every segment stay readable
    lines = [(part, col) for text, col in said for part in _wrap(text, font, PANEL - 8)]
    out = Image.new("RGB", (PANEL, PANEL + 16 * len(lines) + 8), "white")
    out.paste(img.resize((PANEL, PANEL), Image.Resampling.NEAREST), (0, 0))
    draw = ImageDraw.Draw(out)
    for k, region in enumerate(d["regions"]):
        col = PALETTE[k % len(PALETTE)]
        for x0, y0, x1, y1 in region:
            inset = 2 * (k % 3)  # keeps boxes of several segments on one region apart
            draw.rectangle([x0 * sx + inset, y0 * sy + inset, x1 * sx - 1 - inset, y1 * sy - 1 - inset],
                           outline=col, width=2)
        x0, y0 = region[0][0] * sx, region[0][1] * sy
        draw.text((x0 + 3, y0 + 2 + 10 * (k % 3)), str(k), fill=col, font=font)
    for j, (ln, col) in enumerate(lines):
        _text(draw, (4, PANEL + 4 + 16 * j), ln, col, font)
    return out


@dataclass
class Explanation:
    """What SGI matched for one item: a drawing, one row per segment, and the score matrix."""
    image: Image.Image  # one panel per image x caption: boxes of the chosen regions, segments listed
    rows: list[dict]  # image, caption, segment, kind, region (boxes x0,y0,x1,y1), cosine
    scores: torch.Tensor  # [images, captions] SGI scores
    title: str = ""

    def table(self) -> Table:
        """The rows as a rich table (what `unbag explain` prints)."""
        t = Table(title=self.title)
        for col in ("image", "caption", "segment", "kind", "region (x0,y0,x1,y1)...", "cosine"):
            t.add_column(col)
        for k, r in enumerate(self.rows):
            t.add_row(str(r["image"]), str(r["caption"]), r["segment"], r["kind"],
                      " ".join(str(tuple(b)) for b in r["region"]), f"{r['cosine']:.4f}")
            last = k + 1 == len(self.rows) or (self.rows[k + 1]["image"], self.rows[k + 1]["caption"]) != (
                r["image"], r["caption"])
            if last:
                t.add_row("", "", "[bold]SGI score", "", "",
                          f"[bold]{float(self.scores[r['image'], r['caption']]):.4f}", end_section=True)
        return t

    def save(self, out: str | os.PathLike, overwrite: bool = False, inputs: tuple = ()) -> Path:
        """Write the drawing as PNG (atomically), marked as unbag's; its path. A file there that
        unbag did not draw is kept unless `overwrite`, and one of `inputs` (the pictures explained)
        always."""
        check_file_out(out, "explain", drawn_by_unbag, overwrite, inputs)
        return atomic_write(os.path.expanduser(out), png_marked(self.image, "explain"))

    def _repr_png_(self) -> bytes:  # shown inline in notebooks
        buf = io.BytesIO()
        self.image.save(buf, format="PNG")
        return buf.getvalue()


def explain(backend, bench: Benchmark, cfg: SGIConfig) -> Explanation:
    """Score every image x caption of the (single-item) benchmark under SGI and draw the matches."""
    if len(bench.items) != 1:
        raise UnbagError("explain works on one item")
    it = bench.items[0]
    details: list[dict] = []
    scores = score_sgi(backend, bench, cfg=cfg, details=details)[0]
    font = ImageFont.load_default(size=12)
    panels, rows = [], []
    for d in details:
        # the square frame SGI took its regions from (docs/sgi.md, --frame), so the boxes line up
        arr = np.asarray(load_image(it.images[d["image"]], it.source or it.id))
        img = Image.fromarray(framed(arr, cfg.frame)[0] if cfg.mode != "crop" else arr)
        caption = it.captions[d["caption"]]
        panels.append(_panel(img, d, float(scores[d["image"], d["caption"]]), caption, font))
        for (text, kind), region, s in zip(d["segments"], d["regions"], d["sims"]):
            rows.append({"image": d["image"], "caption": d["caption"], "segment": text, "kind": kind,
                         "region": [list(b) for b in region], "cosine": s})
    n_cap = len(it.captions)
    n_rows = (len(panels) + n_cap - 1) // n_cap
    h = max(p.height for p in panels)
    sheet = Image.new("RGB", (n_cap * (PANEL + 8), n_rows * (h + 8)), "white")
    for k, p in enumerate(panels):
        sheet.paste(p, ((k % n_cap) * (PANEL + 8), (k // n_cap) * (h + 8)))
    return Explanation(sheet, rows, scores, f"SGI matches · {backend.spec} · regions {cfg.region_cfg.name}")


def single_item(image: str, caption: str) -> Benchmark:
    """A one-image, one-caption benchmark for explaining free input."""
    if not Path(image).is_file():
        raise UnbagError(f"{image}: image file not found")
    return Benchmark("explain", "explain", [Item("input", [image], [caption], {}, source=image)])


