"""The eqben release, in miniature (official layout, planted ties)."""
import numpy as np

from ._files import COLORS, img, write_json

SPECS = {"eqben": "eqben:{dir}"}


def make(tmp_path_factory):
    """EqBen: annotation/ann_json_finegrained_random.json in shuffled order; two subsets; the light
    release's .jpg for an annotated .png; a YouCook2 .npy frame (BGR) whose two images are one (ties)."""
    root = tmp_path_factory.mktemp("eqben")
    recs = []
    for cnt, sub, ext in ((18, "eqbenkubric_cnt", ".png"), (19, "eqbenkubric_cnt", ".png"), (40, "eqbenyoucook2", ".npy")):
        for i in (0, 1):
            rel = f"{sub}/{cnt:05d}/frame_{i}{ext}"
            if ext == ".npy":
                (root / "image" / sub / f"{cnt:05d}").mkdir(parents=True, exist_ok=True)
                np.save(root / "image" / rel, np.full((24, 24, 3), (10, 80, 200), np.uint8))
            elif cnt == 19:
                img(root / "image" / rel.replace(".png", ".jpg"), 910 + i)  # only the light version's .jpg
            else:
                img(root / "image" / rel, 920 + i)
            for c in (0, 1):
                recs.append({"image": rel, "caption": f"{['two', 'three'][c]} {COLORS[cnt % 5]} cubes",
                             "private_info": {"dataset": sub, "name": f"c{c}i{i}", "sample_cnt": cnt}})
    recs = recs[5:] + recs[:5]
    write_json(root / "annotation" / "ann_json_finegrained_random.json", recs)
    return root
