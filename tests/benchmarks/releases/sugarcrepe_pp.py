"""The sugarcrepe_pp release, in miniature (official layout, planted ties)."""
import json

from ._files import COLORS, img

SPECS = {"sugarcrepe++": "sugarcrepe++:{dir}"}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("scpp")
    (root / "data").mkdir()
    for s, subset in enumerate(["replace_att", "swap_obj"]):
        data = []
        for i in range(3):
            fn = f"1{s}{i}.jpg"
            img(root / "images" / fn, 20 + 3 * s + i)
            data.append({"id": i, "filename": fn, "caption": f"a {COLORS[i]} dog", "caption2": f"a dog that is {COLORS[i]}",
                         "negative_caption": f"a {COLORS[i + 1]} dog"})
        (root / "data" / f"{subset}.json").write_text(json.dumps(data))
    return root
