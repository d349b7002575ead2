"""The imagefolder release, in miniature (official layout, planted ties)."""
from ._files import img

SPECS = {"imagefolder": "imagefolder:{dir}"}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("folder")
    for c, name in enumerate(["red_cube", "blue_sphere", "green_cone"]):
        for k in range(2):
            img(root / name / f"{k}.png", 90 + 2 * c + k)
    return root
