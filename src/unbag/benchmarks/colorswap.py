"""ColorSwap (Burapacheep et al., Findings ACL 2024, arXiv 2402.04492) in its official layout
(docs/benchmarks.md).

colorswap:DIR   DIR is the data/ folder the README unpacks: test.json (300 examples) of {id,
                caption_1, caption_2, image_1, image_2, image_source, caption_source}; images in
                DIR/images.zip, read in place (member = the record's path), or DIR/images/ unpacked.

The ITM scoring lives in a Colab outside the repository; the paper follows Winoground (caption_k
belongs to image_k): text, image and group scores, strict `>` (no official tie rule is public).
Results are also broken down by image_source; their macro mean is unbag's own.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

from ..errors import UnbagError
from .base import Benchmark, Item, zip_ref
from .common import Dropped, need, need_text, read_json, release_dir, unique_ids
from .kinds import Kind, Summary


def _images(root: Path):
    """A function from a record's image path to its reference (a member of images.zip, or a file)."""
    archive = root / "images.zip"
    if archive.is_file():
        try:
            with zipfile.ZipFile(archive) as z:
                names = set(z.namelist())
        except zipfile.BadZipFile as e:
            raise UnbagError(f"{archive}: not a readable zip archive ({e})") from None
        def find(rel: str):
            # the member as written, or under one top folder (a re-zipped copy)
            hit = rel if rel in names else next((n for n in names if n.endswith("/" + rel)), None)
            return zip_ref(archive, hit) if hit else None
        return find
    return lambda rel: str(root / rel)


def load(root: str | Path) -> Benchmark:
    """ColorSwap's test split."""
    root = release_dir(Path(root), ("test.json",), ("data",))  # the archive's data/ folder, or what it holds
    f = root / "test.json"
    data = read_json(f)
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise UnbagError(f"{f}: expected a list of examples")
    find, dropped, items = _images(root), Dropped(f"colorswap:{root}"), []
    for n, ex in enumerate(data):
        where = f"{f}: item {n}"
        need(ex, ("id", "caption_1", "caption_2", "image_1", "image_2"), where)
        need_text(ex, ("caption_1", "caption_2"), where)
        if isinstance(ex["id"], bool) or not (isinstance(ex["id"], int) or isinstance(ex["id"], str) and ex["id"].strip()):
            raise UnbagError(f"{where}: field 'id' must be a whole number or a name, got {ex['id']!r}")
        source = str(ex.get("image_source") or "unknown")
        refs = [find(ex[k]) if isinstance(ex[k], str) else None for k in ("image_1", "image_2")]
        if dropped.present(source, *refs):
            items.append(Item(f"colorswap-{ex['id']}", refs, [ex["caption_1"], ex["caption_2"]], {"subset": source},
                              source=where))
    info = dropped.record({"images": "images.zip" if (root / "images.zip").is_file() else "images/", "notes": [
        "the official ITM scorer (a Colab) is not public; scored as the paper describes, Winoground's text, image "
        "and group with strict '>'", "subsets are image sources; macro/* (their mean) is unbag's own"]})
    return Benchmark("colorswap", f"colorswap:{root}", unique_ids(items, str(f)), info)


RELEASE = "github.com/Top34051/colorswap (the data/ archive its README links: test.json, images.zip)"  # where to download it
BENCHMARKS = {
    "colorswap": Kind("colorswap:DIR", lambda path, root, seed: load(path), suite="colorswap", release=RELEASE,
                      summary=Summary(("all/group", "all/text", "all/image", "all/groupmatch", "*/group"), "all/group")),
}
