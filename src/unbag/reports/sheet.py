"""`unbag world show`: a labelled contact sheet of SWAP items (both images, both captions)."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..utils import atomic_write, check_file_out, drawn_by_unbag, png_marked

THUMB, TEXT_W, PAD = 128, 560, 8


def contact_sheet(out: str | os.PathLike, bench: str = "ctrl", n: int = 2, seed: int = 0,
                  style: str | None = None, overwrite: bool = False) -> Path:
    """Draw `n` items per split x category: image 0, image 1, then id, held-out combos, captions
    (`style` picks the world of a generated benchmark, which is made `n` items per category). A
    file at `out` that unbag did not draw is kept unless `overwrite`."""
    from ..benchmarks import generated, kind, load, load_image

    check_file_out(out, "world show", lambda f: drawn_by_unbag(f, "world show"), overwrite)

    b = load(bench, seed=seed, per_category=n, style=style) if kind(bench).sized and generated(bench) else load(bench)
    chosen, per = [], {}
    for it in b.items:
        key = (it.group["split"], it.group["category"])
        if per.get(key, 0) < n:
            per[key] = per.get(key, 0) + 1
            chosen.append(it)
    font = ImageFont.load_default(size=13)
    row_h = THUMB + 2 * PAD
    sheet = Image.new("RGB", (2 * THUMB + TEXT_W + 4 * PAD, row_h * len(chosen)), "white")
    d = ImageDraw.Draw(sheet)
    for r, it in enumerate(chosen):
        y = r * row_h + PAD
        for k in range(2):
            img = load_image(it.images[k], it.source or it.id).resize((THUMB, THUMB), Image.Resampling.NEAREST)
            sheet.paste(img, (PAD + k * (THUMB + PAD), y))
        held = ", ".join(it.meta.get("held_out") or []) or "none"
        lines = [f"{it.id}   held-out: {held}"]
        for k, c in enumerate(it.captions):
            lines += textwrap.wrap(f"C{k} (true of image {k}): {c}", width=72)
        x = 2 * THUMB + 3 * PAD
        for j, line in enumerate(lines):
            d.text((x, y + j * 17), line, fill="black" if j else "navy", font=font)
        d.line([(0, y + row_h - PAD), (sheet.width, y + row_h - PAD)], fill=(220, 220, 220))
    return atomic_write(os.path.expanduser(out), png_marked(sheet, "world show"))
