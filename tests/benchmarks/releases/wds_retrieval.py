"""The wds_retrieval release, in miniature (official layout, planted ties)."""
from ._files import COLORS, png_bytes, write_tar

SPECS = {}


def make(tmp_path_factory):
    root = tmp_path_factory.mktemp("wds_ret")
    write_tar(root / "test" / "0.tar", {n: d for k in range(3) for n, d in
                                   ((f"r{k}.jpg", png_bytes(300 + k)),
                                    (f"r{k}.txt", f"a {COLORS[k]} cube\nthe {COLORS[k]} cube\n".encode()))})
    (root / "test" / "nshards.txt").write_text("1")
    (root / "dataset_type.txt").write_text("retrieval\n")
    return root
