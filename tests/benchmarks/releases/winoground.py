"""The winoground release, in miniature (official layout, planted ties)."""
import json

from ._files import img

SPECS = {"winoground": "winoground:{dir}"}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("winoground")
    lines = []
    for i, (tag, coll) in enumerate([("Object", "Object"), ("Relation", "Relation"), ("Both", "Both")]):
        img(root / "data" / "images" / f"ex_{i}_img_0.png", 70 + 2 * i)
        img(root / "data" / "images" / f"ex_{i}_img_1.png", 71 + 2 * i)
        lines.append(json.dumps({"id": i, "image_0": f"ex_{i}_img_0", "image_1": f"ex_{i}_img_1",
                                 "caption_0": "a dog bites a man", "caption_1": "a man bites a dog",
                                 "tag": tag, "secondary_tag": "Symbolic" if i == 0 else "",
                                 "num_main_preds": 1, "collapsed_tag": coll}))
    (root / "data" / "examples.jsonl").write_text("\n".join(lines) + "\n")
    return root
