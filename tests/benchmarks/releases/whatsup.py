"""The whatsup release, in miniature (official layout, planted ties)."""
from ._files import img, write_json

SPECS = {"whatsup": "whatsup:{dir}"}


def make(tmp_path_factory):
    """whatsup_vlms' data/: Controlled A (2 object pairs x 4 relations; one item's wrong caption
    equals the true one: a tie), Controlled B (1 pair), COCO-QA one (an int and a string id) and
    VG-QA two (one image missing); coco_qa_two and vg_qa_one absent."""
    root = tmp_path_factory.mktemp("whatsup") / "data"
    a = []
    for p, (o1, o2) in enumerate([("mug", "table"), ("beer-bottle", "armchair")]):
        for r, rel in enumerate(["on", "under", "left_of", "right_of"]):
            name = f"{o1}_{rel}_{o2}.jpeg"
            img(root / "controlled_images" / name, 600 + 4 * p + r)
            words = [w.replace("_", " ") for w in ("on", "under", "left_of", "right_of")]
            caps = [f"a {o1} {rel.replace('_', ' ')} a {o2}"] + [f"a {o1} {w} a {o2}" for w in words if w != rel.replace("_", " ")]
            if p == 1 and r == 0:
                caps[2] = caps[0]  # planted tie: wrong for unbag, right for argmax (the true caption is first)
            a.append({"image_path": f"data/controlled_images/{name}", "caption_options": caps})
    write_json(root / "controlled_images_dataset.json", a)
    b = []
    for r, rel in enumerate(["left_of", "right_of", "in-front_of", "behind"]):
        name = f"cube_{rel}_sphere.jpeg"
        img(root / "controlled_clevr" / name, 620 + r)
        b.append({"image_path": f"data/controlled_clevr/{name}",
                  "caption_options": [f"a cube {rel.replace('_', ' ')} a sphere"] + [f"a cube {w} a sphere" for w in
                                      ("left of", "right of", "in-front of", "behind") if w != rel.replace("_", " ")]})
    write_json(root / "controlled_clevr_dataset.json", b)
    img(root / "val2017" / "000000000139.jpg", 630)
    img(root / "val2017" / "000000000285.jpg", 631)
    write_json(root / "coco_qa_one_obj.json", [[139, "a dog on the left", "a dog on the right"],
                                          ["285", "a cat on the right", "a cat on the left"]])
    img(root / "vg_images" / "7.jpg", 632)
    write_json(root / "vg_qa_two_obj.json", [[7, "a dog to the left of a cat", "a dog to the right of a cat"],
                                        [8, "a man in front of a car", "a man behind a car"]])  # 8.jpg missing
    return root
