"""The aro release, in miniature (official layout, planted ties)."""
import json

from ._files import COLORS, img

SPECS = {"aro-vgr": "aro-vgr:{dir}", "aro-vga": "aro-vga:{dir}", "aro-coco-order": "aro-coco-order:{dir}",
         "aro-flickr-order": "aro-flickr-order:{dir}", "karpathy": "karpathy:{dir}/dataset_coco.json"}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("aro")
    for k in range(3):
        img(root / "images" / f"{k}.jpg", 40 + k, size=(80, 60))
    rel = []
    for k, name in enumerate(["on", "on", "next to", "holding", "holding", "holding"]):  # "next to" is symmetric
        rel.append({"image_path": f"{k % 3}.jpg", "bbox_x": 5, "bbox_y": 4, "bbox_w": 50, "bbox_h": 40,
                    "true_caption": f"the cup is {name} the table", "false_caption": f"the table is {name} the cup",
                    "relation_name": name})
    (root / "visual_genome_relation.json").write_text(json.dumps(rel))
    att = []
    for k in range(27):
        pair = ["red", "wooden"] if k < 25 else ["small", "white"]
        att.append({"image_path": f"{k % 3}.jpg", "bbox_x": 0, "bbox_y": 0, "bbox_w": 30, "bbox_h": 30,
                    "true_caption": f"the {pair[0]} chair and the {pair[1]} table",
                    "false_caption": f"the {pair[1]} chair and the {pair[0]} table", "attributes": pair})
    (root / "visual_genome_attribution.json").write_text(json.dumps(att))
    # Karpathy's layout for the order tests
    images = [{"filepath": "val2014", "filename": f"COCO_val2014_{k:012d}.jpg", "split": "test" if k < 2 else "train",
               "sentences": [{"raw": f"A man riding a {c} horse next to a small dog."} for c in COLORS[k:k + 2]]}
              for k in range(3)]
    for im in images:
        img(root / im["filepath"] / im["filename"], 50 + len(im["filename"]))
    (root / "dataset_coco.json").write_text(json.dumps({"images": images}))
    flickr = [{"filename": f"{k}.jpg", "split": im["split"], "sentences": im["sentences"]} for k, im in enumerate(images)]
    for k in range(3):  # Karpathy's Flickr30k entries name no folder: the images sit in flickr30k-images/
        img(root / "flickr30k-images" / f"{k}.jpg", 70 + k)
    (root / "dataset_flickr30k.json").write_text(json.dumps({"images": flickr}))
    return root
