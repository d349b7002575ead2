"""The naturalbench release, in miniature (official layout, planted ties)."""
from ._files import COLORS, img, write_json

SPECS = {"naturalbench": "naturalbench:{dir}"}


def make(tmp_path_factory):
    """NaturalBench-Retrieval/: metadata.json and images/, one pair of identical images (ties)."""
    root = tmp_path_factory.mktemp("nb") / "NaturalBench-Retrieval"
    recs = []
    for n in range(3):
        for k in (0, 1):
            img(root / "images" / f"{n}_{k}.jpg", 970 + 2 * n + (k if n != 2 else 0))
        recs.append({"index": n, "image_0": f"{n}_0.jpg", "image_1": f"{n}_1.jpg", "caption_0": f"a {COLORS[n]} dog",
                     "caption_1": f"a {COLORS[n + 1]} dog", "question_0": "?"})
    write_json(root / "metadata.json", recs)
    return root
