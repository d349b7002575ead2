"""The spec release, in miniature (official layout, planted ties)."""
from ._files import img, write_json

SPECS = {"spec": "spec:{dir}"}


def make(tmp_path_factory):
    """SPEC's data_root: absolute_size with both directions (K=3; planted ties before and after the
    label), count with image2text only (K=4)."""
    root = tmp_path_factory.mktemp("spec")
    for k in range(3):
        for j in range(3):
            img(root / "absolute_size" / f"{k:06d}" / f"{j}.jpg", 700 + 3 * k + j)
    i2t = [{"query": "000000/1.jpg", "keys": ["a small dog", "a medium dog", "a large dog"], "label": 1},
           # a tie with an earlier key: wrong under both rules
           {"query": "000001/0.jpg", "keys": ["a small cat", "a small cat", "a large cat"], "label": 1},
           # a tie with a later key: right for argmax, wrong for unbag
           {"query": "000002/2.jpg", "keys": ["a small cup", "a large cup", "a large cup"], "label": 1}]
    t2i = [{"query": "a large dog", "keys": ["000000/0.jpg", "000000/1.jpg", "000000/2.jpg"], "label": 2},
           {"query": "a small cat", "keys": ["000001/0.jpg", "000001/0.jpg", "000001/2.jpg"], "label": 0}]
    write_json(root / "absolute_size" / "image2text.json", i2t)
    write_json(root / "absolute_size" / "text2image.json", t2i)
    img(root / "count" / "9" / "a.png", 710)
    write_json(root / "count" / "image2text.json", [{"query": "9/a.png", "keys": ["one dog", "two dogs", "three dogs",
                                                                              "four dogs"], "label": 3}])
    return root
