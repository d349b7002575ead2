"""Zero-shot classification on an ImageFolder directory (a general-ability check).

imagefolder:DIR   DIR/<class>/<image files>; class names are the folder names with '_' as spaces, or
                  the lines of DIR/classnames.txt (in sorted folder order); prompt templates from
                  DIR/templates.txt (one per line, '{}' for the class name) or unbag's short set.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UnbagError

IMAGE_EXT = (".png", ".jpg", ".jpeg", ".webp", ".bmp")
# a short ensemble from CLIP's ImageNet prompts
TEMPLATES = ("a photo of a {}.", "a bad photo of a {}.", "a photo of the large {}.", "a photo of the small {}.",
             "a cropped photo of a {}.", "a bright photo of a {}.", "itap of a {}.")


@dataclass
class ClassificationSet:
    name: str
    spec: str
    images: list[str]
    labels: list[int]
    classes: list[str]
    templates: tuple[str, ...]
    info: dict = field(default_factory=dict)
    image_size: int | None = None


def load(root: str | Path) -> ClassificationSet:
    root = Path(root)
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not folders:
        raise UnbagError(f"{root}: no class folders (expected DIR/<class>/<images>)")
    names = [f.name.replace("_", " ") for f in folders]
    if (root / "classnames.txt").is_file():
        names = [x.strip() for x in (root / "classnames.txt").read_text().splitlines() if x.strip()]
        if len(names) != len(folders):
            raise UnbagError(f"{root / 'classnames.txt'}: {len(names)} names for {len(folders)} class folders")
    templates = TEMPLATES
    if (root / "templates.txt").is_file():
        templates = tuple(x.strip() for x in (root / "templates.txt").read_text().splitlines() if x.strip())
        bad = [t for t in templates if "{}" not in t]
        if bad:
            raise UnbagError(f"{root / 'templates.txt'}: template {bad[0]!r} has no '{{}}' for the class name")
    images, labels = [], []
    for c, f in enumerate(folders):
        for p in sorted(f.iterdir()):
            if p.suffix.lower() in IMAGE_EXT:
                images.append(str(p))
                labels.append(c)
    if not images:
        raise UnbagError(f"{root}: no images in the class folders")
    return ClassificationSet("imagefolder", f"imagefolder:{root}", images, labels, names, templates,
                             {"classes": len(names), "images": len(images), "templates": len(templates)})
