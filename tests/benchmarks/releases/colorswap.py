"""The colorswap release, in miniature (official layout, planted ties)."""
from ._files import COLORS, png_bytes, write_json

SPECS = {"colorswap": "colorswap:{dir}"}


def make(tmp_path_factory):
    """ColorSwap's data/ with images.zip left packed; one example's two images are the same picture (ties)."""
    import zipfile

    root = tmp_path_factory.mktemp("colorswap") / "data"
    root.mkdir()
    recs, members = [], {}
    for n, k in enumerate((9, 21, 989)):
        for j in (1, 2):
            members[f"images/img_{k}_{j}.png"] = png_bytes(3 * n + (j if n != 2 else 1))
        recs.append({"id": k, "caption_1": f"a {COLORS[n]} raft on {COLORS[n + 1]} water",
                     "caption_2": f"a {COLORS[n + 1]} raft on {COLORS[n]} water", "image_1": f"images/img_{k}_1.png",
                     "image_2": f"images/img_{k}_2.png", "image_source": "midjourney" if n else "dalle3",
                     "caption_source": "human"})
    with zipfile.ZipFile(root / "images.zip", "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    write_json(root / "test.json", recs)
    return root
