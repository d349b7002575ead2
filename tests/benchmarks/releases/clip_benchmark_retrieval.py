"""The clip_benchmark_retrieval release, in miniature (official layout, planted ties)."""
import json

from ._files import COLORS, img

SPECS = {}


def make(tmp_path_factory):
    """CLIP_benchmark's retrieval annotation files: coco_test_karpathy.json (COCO captions layout,
    images in val2014/) and flickr30k_test_karpathy.txt (images beside it)."""
    root = tmp_path_factory.mktemp("cb_ret")
    images = [{"id": 10 + k, "file_name": f"COCO_val2014_{k:012d}.jpg"} for k in range(3)]
    anns = [{"image_id": 10 + k, "id": 100 + 2 * k + j, "caption": f"a {COLORS[k + j]} cube"} for k in range(3)
            for j in range(2)]
    for im in images:
        img(root / "val2014" / im["file_name"], 400 + im["id"])
    (root / "coco_test_karpathy.json").write_text(json.dumps({"images": images, "annotations": anns}))
    flickr = root / "flickr"
    lines = ["image,caption"]
    for k in range(2):
        img(flickr / f"{1000 + k}.jpg", 500 + k)
        lines += [f"{1000 + k}.jpg,a {COLORS[k]} dog, running", f"{1000 + k}.jpg,the {COLORS[k]} dog"]
    (flickr / "flickr30k_test_karpathy.txt").write_text("\n".join(lines) + "\n")
    return root
