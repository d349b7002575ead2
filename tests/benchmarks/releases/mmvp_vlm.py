"""The mmvp_vlm release, in miniature (official layout, planted ties)."""
from ._files import img

SPECS = {"mmvp-vlm": "mmvp-vlm:{dir}"}


def make(tmp_path_factory):
    """MMVP_VLM: Questions.csv and 'MLLM_VLM Images/<Type>/<id>.jpg', two patterns of one pair each
    plus a pair whose two images are one picture (ties)."""
    root = tmp_path_factory.mktemp("mmvp")
    rows = [(1, "Orientation", "the dog is facing left"), (2, "Orientation", "the dog is facing right"),
            (3, "Camera Perspective", "a close-up of a cube"), (4, "Camera Perspective", "a cube from far away"),
            (5, "Color", "a red cube"), (6, "Color", "a blue cube")]
    for qid, kind, _ in rows:
        img(root / "MLLM_VLM Images" / kind / f"{qid}.jpg", 800 + (qid if qid < 5 else 5))
    (root / "Questions.csv").write_text("Question ID,Type,Statement\n" + "".join(f"{q},{t},{s}\n" for q, t, s in rows))
    return root
