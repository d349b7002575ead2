"""The sugarcrepe release, in miniature (official layout, planted ties)."""
import json

from ._files import COLORS, img

SPECS = {"sugarcrepe": "sugarcrepe:{dir}"}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("sugarcrepe")
    for s, subset in enumerate(["add_att", "replace_obj", "swap_att"]):
        data = {}
        for i in range(4):
            fn = f"0000000{s}{i}.jpg"
            img(root / "val2017" / fn, 10 * s + i)
            c = COLORS[i]
            data[str(i)] = {"filename": fn, "caption": f"a {c} cube on a table", "negative_caption": f"a {c} table on a cube"}
        data["4"] = {"filename": f"0000000{s}0.jpg", "caption": "a tie", "negative_caption": "a tie"}  # a tie: wrong
        (root / "data").mkdir(exist_ok=True)
        (root / "data" / f"{subset}.json").write_text(json.dumps(data))
    return root
