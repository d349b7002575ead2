"""The wds_classification release, in miniature (official layout, planted ties)."""
from ._files import png_bytes, write_tar

SPECS = {"wds": "wds:{dir}"}


def make(tmp_path_factory):
    """CLIP_benchmark's webdataset layout: test/{nshards.txt, 0.tar, 1.tar}, classnames and templates."""
    root = tmp_path_factory.mktemp("wds_cls")
    labels = [0, 1, 2, 0, 0, 1, 2]
    for shard, ks in enumerate(([0, 1, 2, 3], [4, 5, 6])):
        write_tar(root / "test" / f"{shard}.tar", {n: d for k in ks for n, d in
                                              ((f"s{k:04d}.png", png_bytes(200 + k)), (f"s{k:04d}.cls", f"{labels[k]}\n".encode()))})
    (root / "test" / "nshards.txt").write_text("2\n")
    (root / "classnames.txt").write_text("red cube\nblue sphere\ngreen cone\n")
    (root / "zeroshot_classification_templates.txt").write_text("a photo of a {c}.\na picture of the {c}.\n")
    return root
