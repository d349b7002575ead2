"""The svo_probes release, in miniature (official layout, planted ties)."""
from ._files import img

SPECS = {"svo-probes": "svo-probes:{dir}"}


def make(tmp_path_factory):
    """svo_probes.csv with rows negating the subject, the verb, the object, two parts (excluded), one
    with a missing image and one whose two images are one picture (a tie)."""
    root = tmp_path_factory.mktemp("svo")
    for k in range(1, 6):
        img(root / "images" / f"{k}.jpg", 960 + k)
    (root / "images" / "6.png").write_bytes((root / "images" / "5.jpg").read_bytes())  # same picture, as PNG name
    rows = [(0, "A man rides a horse.", "True,False,False", 1, 2), (1, "A dog eats food.", "False,True,False", 3, 4),
            (2, "A girl kicks a ball.", "False,False,True", 5, 6), (3, "A man walks.", "True,True,False", 1, 3),
            (4, "A cat sits.", "False,True,False", 1, 99)]
    (root / "svo_probes.csv").write_text(
        "index,sentence,pos_triplet,neg_triplet,subj_neg,verb_neg,obj_neg,pos_url,neg_url,pos_image_id,neg_image_id\n"
        + "".join(f'{i},{s},"a,b,c","a,d,c",{f},http://x/{p},http://x/{q},{p},{q}\n' for i, s, f, p, q in rows))
    return root
