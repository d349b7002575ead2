"""The imagecode release, in miniature (official layout, planted ties)."""
from ._files import img, write_json

SPECS = {"imagecode": "imagecode:{dir}"}


def make(tmp_path_factory):
    """ImageCoDe's data/ with image-sets/: a video set (frames numbered out of string order) and a
    static set whose target has an identical twin later in the set (a tie)."""
    root = tmp_path_factory.mktemp("imagecode")
    frames = [3, 12, 25, 100, 7, 45, 9, 80, 2, 60]
    for x in frames:
        img(root / "image-sets" / "video-set_1" / f"img{x}.jpg", 930 + x % 17)
    for k in range(10):
        img(root / "image-sets" / "open-images-1_ab" / f"img{k}.jpg", 950 + (k if k != 8 else 4))
    write_json(root / "valid_data.json", {"video-set_1": {"3": "a red cube", "0": "a cube"},
                                     "open-images-1_ab": {"4": "a green dog"}, "missing-set": {"1": "x"}})
    return root
