"""Helpers shared by the public-benchmark loaders: reading JSON with located errors, image folders."""
from __future__ import annotations

import csv
import os
from pathlib import Path

from .. import utils
from ..errors import UnbagError, warn
from .items import Items


def read_json(path: Path):
    return utils.read_json(path, "file not found (see docs/benchmarks.md for the expected layout)")


def read_jsonl(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise UnbagError(f"{path}: file not found (see docs/benchmarks.md for the expected layout)")
    text = utils.read_text(path)
    return [(n, utils.parse_json(line, f"{path}:{n}", whole=False))
            for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def inside(ref: str | os.PathLike, roots: list[Path]) -> bool:
    """Whether a path lies in one of `roots` as written: '..' is taken literally and links are not
    followed (a link the user made inside a folder they named is theirs to make: COCO's val2017
    linked in, a Hugging Face snapshot whose files link into its cache's blobs/)."""
    p = os.path.normpath(os.path.abspath(ref))
    return any(p == str(r) or p.startswith(str(r).rstrip(os.sep) + os.sep) for r in roots)


def kept_inside(path: Path, roots: list[Path], where: str, what: str) -> Path:
    """`path`, a path a release wrote, refused when it is absolute or climbs out of `roots` with
    '..' (`inside`): `where` names the file and field at fault."""
    if not inside(path, [Path(os.path.normpath(os.path.abspath(r))) for r in roots]):
        raise UnbagError(f"{where}: {what} {path} lies outside {', '.join(map(str, roots))} (an absolute path, or "
                         "'..' out of it); unbag reads only inside the folders you name")
    return path


def csv_records(f: Path, need: tuple[str, ...], encoding: str = "utf-8-sig"):
    """(line, row dict) of a CSV file with a header holding the columns `need`; a quote left open,
    a row short of the header's columns, an over-long field or bytes that are not UTF-8 stop with
    the file and line."""
    with open(utils.opened(f), newline="", encoding=encoding) as fh:
        reader, end = csv.DictReader(fh, strict=True), 1
        try:
            missing = [c for c in need if c not in (reader.fieldnames or [])]
            if missing:
                raise UnbagError(f"{f}:1: missing column(s) {', '.join(missing)}")
            for row in reader:
                line, end = end + 1, reader.line_num
                if end > line:  # csv joins lines inside quotes: an unbalanced quote swallows the rows after it
                    raise UnbagError(f"{f}:{line}: a quoted field runs on to line {end} (an unbalanced quote?)")
                if None in row.values():
                    raise UnbagError(f"{f}:{line}: {sum(v is None for v in row.values())} column(s) missing "
                                     "(a truncated row?)")
                yield line, row
        except csv.Error as e:
            raise UnbagError(f"{f}:{end + 1}: not a readable CSV row ({e})") from None
        except UnicodeDecodeError as e:
            raise UnbagError(f"{f}: not UTF-8 text (byte {e.start} of a block)") from None


def need(obj: dict, fields: tuple[str, ...], where: str) -> None:
    """Raise naming the first missing field."""
    if not isinstance(obj, dict):
        raise UnbagError(f"{where}: expected an object, got {type(obj).__name__}")
    for f in fields:
        if f not in obj:
            raise UnbagError(f"{where}: missing field '{f}'")


def need_text(obj: dict, fields: tuple[str, ...], where: str) -> None:
    """Raise naming the first of `fields` that is not a non-empty string (an empty caption would
    be scored, and could beat the true one)."""
    for f in fields:
        if not isinstance(obj[f], str) or not obj[f].strip():
            raise UnbagError(f"{where}: field '{f}' must be a non-empty caption, got {obj[f]!r}")


def image_dir(root: Path, *candidates: str) -> Path:
    """The first existing image folder among root/candidates (or root itself)."""
    for c in candidates:
        if (root / c).is_dir():
            return root / c
    return root


def given_images(image_root: str | None, name: str = "NAME") -> Path | None:
    """The IMAGE_ROOT of a `name:DIR:IMAGE_ROOT` spec, checked; None when it gives none."""
    if not image_root:
        return None
    if not Path(image_root).is_dir():
        raise UnbagError(f"{image_root}: image root not found (the IMAGE_ROOT of {name}:DIR:IMAGE_ROOT)")
    return Path(image_root)


def images_at(root: Path, image_root: str | None) -> Path:
    """The image folder: IMAGE_ROOT when given (the official releases keep COCO's images apart),
    else DIR/images, DIR/val2017 or DIR."""
    return given_images(image_root) or image_dir(root, "images", "val2017")


# caption files (training data and `unbag negatives`): CLIC's CSV layout and JSONL
IMAGE_EXT = (".png", ".jpg", ".jpeg", ".webp")


def caption_file(spec: str) -> str:
    """The path of csv:PATH, jsonl:PATH, or a path ending in .csv / .jsonl."""
    return spec.split(":", 1)[1] if spec.startswith(("csv:", "jsonl:")) else spec


def caption_rows(path: Path) -> list[tuple[Path, list[str]]]:
    """(image path, captions) of every row of a caption file: CLIC's CSV (image path, caption,
    further sentences; a header or any row whose first cell is not an image path is skipped) or
    JSONL ({"image", "caption"} or {"image", "captions": [...]}); paths relative to the file;
    errors name the file and line."""
    path = Path(path)
    return list(_csv_rows(path) if path.suffix == ".csv" else _jsonl_rows(path))


def coco_rows(annotations: Path, images: Path | None = None) -> list[tuple[Path, list[str]]]:
    """(image path, its captions) per image of a COCO captions file (captions_train2017.json:
    images [{id, file_name}], annotations [{image_id, caption}]), images under `images` (default:
    the file's folder), in the file's image order; errors name the file and the entry."""
    annotations = Path(annotations)
    data = read_json(annotations)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list) or not isinstance(data.get("annotations"), list):
        raise UnbagError(f"{annotations}: expected COCO captions JSON with lists 'images' and 'annotations'")
    root = Path(images) if images else annotations.parent
    files: dict = {}
    for n, im in enumerate(data["images"]):
        if not isinstance(im, dict) or "id" not in im or not isinstance(im.get("file_name"), str):
            raise UnbagError(f"{annotations}: images[{n}] needs 'id' and 'file_name'")
        if not isinstance(im["id"], (int, str)) or isinstance(im["id"], bool):
            raise UnbagError(f"{annotations}: images[{n}]: field 'id' should be a number or a string, got {im['id']!r}")
        if im["id"] in files:
            raise UnbagError(f"{annotations}: images[{n}]: id {im['id']!r} is also the id of an earlier image")
        kept_inside(root / im["file_name"], [root], f"{annotations}: images[{n}]: field 'file_name'", "image")
        files[im["id"]] = im["file_name"]
    caps: dict = {}
    ids: set = set()
    for n, a in enumerate(data["annotations"]):
        if not isinstance(a, dict) or a.get("image_id") not in files:
            raise UnbagError(f"{annotations}: annotations[{n}]: 'image_id' names no image of the file")
        if "id" in a:  # COCO's annotation ids are unique: a repeated one is a duplicated record
            if a["id"] in ids:
                raise UnbagError(f"{annotations}: annotations[{n}]: id {a['id']!r} is also the id of an earlier "
                                 "annotation (a duplicated record)")
            ids.add(a["id"])
        if not isinstance(a.get("caption"), str) or not a["caption"].strip():
            raise UnbagError(f"{annotations}: annotations[{n}]: field 'caption' should be a non-empty string")
        caps.setdefault(a["image_id"], []).append(a["caption"].strip())
    return [(root / files[i], caps[i]) for i in files if i in caps]


def _jsonl_rows(path: Path):
    for line, obj in read_jsonl(path):
        if "image" not in obj:
            raise UnbagError(f"{path}:{line}: missing field 'image'")
        caps = obj.get("captions") or ([obj["caption"]] if "caption" in obj else None)
        if not caps or not all(isinstance(c, str) and c.strip() for c in caps):
            raise UnbagError(f"{path}:{line}: field 'caption' (a non-empty string) or "
                             "'captions' (a list of non-empty strings) is required")
        yield path.parent / obj["image"], list(caps)


def _csv_rows(path: Path):
    with open(utils.opened(path), newline="") as f:
        reader, end = csv.reader(f, strict=True), 0
        try:
            for row in reader:
                line, end = end + 1, reader.line_num
                if end > line:  # csv joins lines inside quotes: an unbalanced quote swallows rows
                    raise UnbagError(f"{path}:{line}: a quoted field runs on to line {end} (an "
                                     "unbalanced quote?); each row must sit on one line")
                if not row or not row[0].lower().endswith(IMAGE_EXT):
                    continue  # header or blank line, as in CLIC's reader
                caps = [c.strip() for c in row[1:] if c.strip()]
                if not caps:
                    raise UnbagError(f"{path}:{line}: no caption after the image path")
                yield path.parent / row[0], caps
        except csv.Error as e:
            raise UnbagError(f"{path}:{end + 1}: malformed CSV from this line on ({e}; an unbalanced "
                             "quote?)") from None


def _loops(path: str) -> bool:
    """Whether a path is a chain of links that never reaches a file (a missing file is not)."""
    import errno
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ELOOP
    return False


class Dropped:
    """Items a loader leaves out because an image file is absent (as the official loaders do),
    counted per subset and warned about by name: recorded in the benchmark's info as
    `dropped_missing_image`."""

    def __init__(self, name: str):
        self.name, self.counts, self.example = name, {}, None

    def present(self, subset: str, *paths, where: str | None = None) -> bool:
        """Whether every image path exists (a zip member or Arrow cell: its file); counts the item if
        not. A path holding a NUL byte names no file at all: refused, naming `where`."""
        from .base import ref_file
        bad = next((p for p in paths if p is not None and "\0" in str(p)), None)
        if bad is not None:
            raise UnbagError(f"{where or self.name}: image path {str(bad)!r} holds a NUL byte; no file has such a name")
        gone = next((p for p in paths if p is None or not Path(ref_file(str(p))).is_file()), False)
        if gone is False:
            return True
        if gone is not None and _loops(ref_file(str(gone))):
            raise UnbagError(f"{where or self.name}: image {gone} is a link that leads back to itself")
        self.add(subset, gone)
        return False

    def add(self, subset: str, path=None) -> None:
        """Count one item of `subset` left out (`path`: the image it missed, the first kept as an example)."""
        self.counts[subset] = self.counts.get(subset, 0) + 1
        if self.example is None and path is not None:
            self.example = str(path)

    def record(self, info: dict) -> dict:
        """Warn about the dropped items and record them in `info` (returned)."""
        if self.counts:
            warn(f"{self.name}: {sum(self.counts.values())} item(s) left out because an image file is missing ("
                 + ", ".join(f"{s}: {n}" for s, n in sorted(self.counts.items())) + "); the results record them "
                 "as dropped_missing_image")
        info["dropped_missing_image"] = dict(sorted(self.counts.items()))
        if self.example:
            info["missing_image_example"] = self.example
        return info


def release_dir(root: Path, markers: tuple[str, ...], tops: tuple[str, ...]) -> Path:
    """Where a release's files lie: `root`, or the first top folder `root/TOP` holding one of
    `markers` (a download unpacked with its top folder; without one, `root` itself)."""
    if any((root / m).exists() for m in markers):
        return root
    return next((root / t for t in tops if any((root / t / m).exists() for m in markers)), root)


def folder_in(homes: tuple[Path, ...], *names: str) -> Path | None:
    """The first existing folder HOME/NAME, homes in order (a release's own folder, then the
    folder the user named: a `data/` top folder's images may lie beside it)."""
    return next((h / n for h in homes for n in names if (h / n).is_dir()), None)


def first_file(*paths: Path) -> Path | None:
    """The first of `paths` that is a file."""
    return next((p for p in paths if p.is_file()), None)


def missing_subsets(name: str, wanted: dict[str, Path]) -> list[str]:
    """The subsets whose file is absent, warned about by name (the results record them)."""
    gone = [s for s, p in wanted.items() if not p.is_file()]
    if gone and len(gone) < len(wanted):
        warn(f"{name}: {len(gone)} subset file(s) missing, not scored: "
             + ", ".join(f"{s} ({wanted[s].name})" for s in gone))
    return gone


def unique_ids(items, name: str):
    """Refuse two items with one id (a duplicated record), naming both places."""
    items = Items(items) if not isinstance(items, Items) else items
    dup = items.duplicate_id()
    if dup is not None:
        it, was = items[dup[0]], items[dup[1]]
        raise UnbagError(f"{it.source or name}: duplicate id {it.id!r} (also at {was.source or was.id})")
    return items
