"""The valse release, in miniature (official layout, planted ties)."""
import json

from ._files import img

SPECS = {"valse": "valse:{dir}"}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("valse")
    (root / "data").mkdir()
    for piece in ("existence", "counting-hard"):
        data = {}
        for i in range(3):
            fn = f"{piece}-{i}.jpg"
            img(root / "images" / "coco2017" / fn, 60 + i)
            data[f"k{i}"] = {"dataset": "coco2017", "image_file": fn, "caption": f"there are {i + 1} dogs",
                             "foil": f"there are {i + 2} dogs", "classes": None, "classes_foil": None,
                             "mturk": {"caption": 1 if i == 2 else 3, "foil": 0, "other": 0},
                             "linguistic_phenomena": piece}
        (root / "data" / f"{piece}.json").write_text(json.dumps(data))
    return root
