"""Benchmark registry: a spec `NAME`, `NAME:DIR` or `NAME:DIR:IMAGE_ROOT` -> a loaded benchmark.

Each benchmark declares itself in its own module: a module-level `BENCHMARKS` of `Kind`s says
how its spec reads, how it loads, how it is scored and summarised; this registry collects them
(the generated world's and the general-ability ones are declared here). The CLI's help, `unbag
run`, `unbag suite` and the tests read this table. To add a benchmark: one new module next to this
one (CONTRIBUTING.md).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import NamedTuple

from .. import utils
from ..errors import UnbagError
from ..world.styles import WORLDS, resolve, size, split_world, world as world_of
from ..world.swap import CATEGORIES
from .base import Benchmark, Item, image_key, load_image, ref_file
from .common import inside
from .kinds import DEFAULT_SUMMARY, RETRIEVAL, Grid, Kind, Summary


def _ctrl(path: str, world: str | None, seed: int):
    return _ctrl_sized(path, seed, None, world)


def _ctrl_item(path: str, item_id: str, seed: int, world: str | None = None) -> Benchmark:
    from . import ctrl
    if not path or path.isdigit():
        return ctrl.generated_item(item_id, seed, px=int(path) if path else None, style=world)
    return ctrl.load(path).only(item_id)


def _ctrl_size(path: str, world: str | None, model_px: int | None) -> int | None:
    """The side the generated ctrl is drawn at: the spec's (ctrl[@WORLD]:SIZE), else the model's
    input side when it is larger than the world's (a real model reads pictures drawn at its own
    size, not enlarged ones), else None (the world's)."""
    if path.isdigit():
        return int(path)
    return model_px if model_px and model_px > world_of(world).px else None


def _ctrl_sized(path: str, seed: int, per_category: int | None, style: str | None, px: int | None = None,
                device: str | None = None, progress: bool = False) -> Benchmark:
    from ..world.styles import check_render
    from . import ctrl
    if path and not path.isdigit():
        if style is not None or per_category is not None or px is not None:
            raise UnbagError(f"ctrl:{path}: a built benchmark has the size and world it was built with; "
                             "per_category, style (ctrl@WORLD) and size (ctrl@WORLD:SIZE) are for the generated ctrl")
        return ctrl.load(path)
    px = int(path) if path else px  # the spec's own size wins
    if px is not None:
        check_render(px)
    n = ctrl.DEFAULT_PER_CATEGORY if per_category is None else per_category
    return ctrl.generated(seed=seed, per_category=n, px=px, style=style, device=device, progress=progress)


def _render_stamp(path: str, world: str | None = None, per_category: int | None = None, px: int | None = None) -> dict:
    """The world, renderer version and picture size of a generated benchmark (called for generated
    specs only: the files of one read from disk are fingerprinted instead)."""
    w = world_of(world)
    return {"style": w.name, "render": w.render_version(px or w.px), "size": px or w.px}


def _ctrl_stamp(path: str, world: str | None = None, per_category: int | None = None, px: int | None = None) -> dict:
    """`_render_stamp` at the side ctrl is drawn at, and its items per category and split."""
    from .ctrl import DEFAULT_PER_CATEGORY
    return _render_stamp(path, world, px=int(path) if path.isdigit() else px) | {
        "per_category": per_category or DEFAULT_PER_CATEGORY}


def _ctrl_sgi(path: str, world: str | None) -> dict:
    """The SGI options of ctrl's images: the 3D world's (learned object boxes, ...) or none; a
    built one's world is in its meta.json."""
    if path:
        meta = Path(path) / "meta.json"
        try:
            got = utils.read_json(meta)
            # a folder written before worlds were recorded is of the world of format version 1
            world = got.get("style") or next(n for n, w in WORLDS.items() if w.ctrl_version == 1)
        except (UnbagError, AttributeError):
            return {}  # loading it says what is wrong
        if world not in WORLDS:
            return {}
    return dict(world_of(world).sgi)


def _ctrl_retrieval(path: str, world: str | None, seed: int):
    from .retrieval import ctrl_retrieval
    if path and not path.isdigit():
        raise UnbagError(f"ctrl-retrieval:{path}: the part after ':' is the number of scenes")
    if path and int(path) < 1:
        raise UnbagError(f"ctrl-retrieval:{path}: the number of scenes must be >= 1")
    # drawn at its world's size: its pictures are the training stream's (the model's own)
    return ctrl_retrieval(int(path) if path else 1000, px=size(world), style=world)


CTRL_GRID = Grid(
    "ctrl", CATEGORIES,
    average=CATEGORIES[:3], chance=1 / 6,
    note="Strict '>': ties count as wrong. Chance: group 16.7, GroupMatch 50 (the true pairing of a SWAP "
         "pair beats the swapped one in total; arXiv 2510.07632). Retrieval: ctrl-retrieval recall@1 "
         "(image->text, text->image), ties against the model.",
    joined=(("GroupMatch ID", "id/all/groupmatch"), ("GroupMatch OOD", "ood/all/groupmatch"),
            ("R@1 i2t", "all/retrieval/i2t/R@1"), ("R@1 t2i", "all/retrieval/t2i/R@1")),
    joined_title="GroupMatch and retrieval R@1", metrics=("text", "image", "group", "groupmatch"))
EXPLAIN = ("ood-color-0000", "ood-size-0000", "ood-material-0000", "ood-count-0000", "ood-relation-0000")

BENCHMARKS: dict[str, Kind] = {
    "ctrl": Kind(f"ctrl[@{'|@'.join(WORLDS)}][:SIZE] (generated; SIZE: its picture side, by default the model's input side "
                 "when larger than the world's) | ctrl:DIR (built with `world build`)", _ctrl, needs_dir=False,
                 summary=Summary((), "", grid=CTRL_GRID), item=_ctrl_item, explain=EXPLAIN,
                 sized=_ctrl_sized, drawn_size=_ctrl_size, stamp=_ctrl_stamp, worlds=True, sgi_of=_ctrl_sgi,
                 pictures="world"),
    "ctrl-retrieval": Kind(f"ctrl-retrieval[@{'|@'.join(WORLDS)}][:N]", _ctrl_retrieval, needs_dir=False, global_only=True,
                           summary=dataclasses.replace(RETRIEVAL, grid=CTRL_GRID),
                           stamp=_render_stamp, worlds=True, pictures="world"),
}


def _declared() -> dict[str, Kind]:
    """The benchmarks declared in their own modules (a module-level `BENCHMARKS`), module by module
    in name order: a new benchmark is one new file."""
    out = dict(sorted(utils.collect(__name__, "BENCHMARKS").items()))  # help and errors list them by name
    twice = sorted(set(out) & set(BENCHMARKS))
    if twice:
        raise RuntimeError(f"benchmark(s) {', '.join(twice)} declared both in a module and in benchmarks/__init__.py")
    return out


BENCHMARKS.update(_declared())


class BenchSpec(NamedTuple):
    """A benchmark spec NAME[@WORLD][:PATH[:THIRD]], parsed once."""
    kind: Kind
    name: str
    path: str  # the release folder or file, or a generated benchmark's item count
    third: str | None  # the image root, the dataset name or the world, for kinds that take one


def parse(spec: str) -> BenchSpec:
    """The parts of a benchmark spec; an unregistered NAME is an error listing the registered ones."""
    parts = split_world(spec, BENCHMARKS, "benchmark spec")
    if parts is None:
        name = spec.partition(":")[0].partition("@")[0]
        raise UnbagError(f"unknown benchmark {name!r}; available: {', '.join(BENCHMARKS)} (as NAME or NAME:DIR)")
    name, world, path = parts
    k, third = BENCHMARKS[name], world
    if world is not None and not k.worlds:
        raise UnbagError(f"benchmark spec {spec!r}: @WORLD is for the generated benchmarks "
                         f"({', '.join(n for n, x in BENCHMARKS.items() if x.worlds)})")
    if k.image_root or k.dataset:
        path, _, third = path.partition(":")
    return BenchSpec(k, name, path, third or None)


def kind(spec: str) -> Kind:
    """The registered benchmark a spec names."""
    return parse(spec).kind


RESERVED = ("all", "macro")  # bucket names of the summary keys: no subset, split or category may take them


def load(spec: str, seed: int = 0, per_category: int | None = None, style: str | None = None,
         outside_root: bool = False, px: int | None = None, device: str | None = None, progress: bool = False):
    """Load the benchmark a spec names (`seed`: the world seed of generated ones; `per_category`,
    `style` and `px`: the items per category and split, the world and the picture side of a
    generated one; the spec's own side, ctrl@WORLD:SIZE, wins over `px`; `device`: where a generated
    one's pictures are drawn, None the CPU; `progress`: a bar while they are). Its `spec` is the one
    given (image root included) and its `info` records the image root and the fingerprint of the
    files it read (`fingerprint`). Every image path a release writes must lie inside the
    benchmark's folder or image root as written (an absolute path or a `..` out of them is refused,
    naming the item; links in the folders are followed), unless `outside_root`: then the result
    records it."""
    utils.at_least("seed", seed, 0)
    if per_category is not None:
        utils.at_least("per_category", per_category)
    k, name, path, third = parse(spec)
    image_root = third if k.image_root else None
    if k.needs_dir and not path:
        raise UnbagError(f"benchmark {name} reads a local copy of its official release: use {k.form} "
                         "(layouts in docs/benchmarks.md)")
    sized = per_category is not None or style is not None or px is not None
    if sized and k.sized is None:
        raise UnbagError(f"per_category, style and px make a generated benchmark "
                         f"({', '.join(n for n, x in BENCHMARKS.items() if x.sized)}), not {spec!r}")
    if k.worlds and style is not None and third is not None and resolve(style) != third:
        raise UnbagError(f"benchmark {spec!r} with style {style!r}: two worlds named")
    drawn = sized or (device is not None and k.sized is not None and generated(spec))
    with utils.reading() as read:  # the files the loader reads: what the fingerprint covers
        b = k.sized(path, seed, per_category, style or third, px, device, progress) if drawn \
            else k.loader(path, third, seed)
    b.spec = spec
    if hasattr(b, "items") and not b.items:
        raise UnbagError(nothing_to_score(b, k, path, third if k.image_root else None))
    if hasattr(b, "items"):  # every loader checks its fields; this catches any it missed
        for c, where_ in b.items.first_use("captions"):
            if not isinstance(c, str) or not c.strip():
                raise UnbagError(f"{where_} is empty ({c!r})")
        groups = b.items.distinct_groups()
        for group, where_ in groups:
            for key in ("subset", "split", "category"):
                # 'all/acc' and 'macro/acc' are the summary's keys: a bucket of that name beside others
                # would be counted into them (a benchmark of one bucket may call it 'all')
                if group.get(key) in RESERVED and len({g.get(key) for g, _ in groups}) > 1:
                    raise UnbagError(f"{where_}: its {key} is named {group[key]!r}, a name the results keep for "
                                     f"their summaries ({', '.join(RESERVED)}); rename it in the file")
    if image_root:
        b.info["image_root"] = str(Path(image_root).resolve())
    if generated(spec):
        b.info["files"] = None
        return b
    refs, roots = _image_refs(b), image_roots(spec, links=False)
    outside = [(w, r) for w, r in refs if not inside(r, roots)]
    if outside and not outside_root:
        where_, ref = outside[0]
        raise UnbagError(f"{where_}: image {ref} lies outside the benchmark's folder"
                         f"{' and image root' if image_root else ''} ({', '.join(map(str, roots))})"
                         f"{f' (and {len(outside) - 1} more)' if len(outside) > 1 else ''}: the release's file "
                         "names it by an absolute path or climbs out with '..'; pass --images-outside-root (plans: "
                         "images_outside_root = true) to read images anywhere, which the results record")
    if outside_root:
        b.info["images_outside_root"] = True
    b.info["files"] = fingerprint(read, [r for _, r in refs])
    return b


def nothing_to_score(b, k: Kind, path: str, image_root: str | None) -> str:
    """Why a benchmark holds no item, located: the folder searched, what it expected there and
    what it left out."""
    gone = sum(b.info.get("dropped_missing_image", {}).values())
    where = f"{b.name}:{path}" + (f" (images: {image_root})" if image_root else "")
    if gone:
        why = (f"all {gone} item(s) it read name an image file that is missing (the first expected at "
               f"{b.info.get('missing_image_example', '?')})")
    else:
        why = "its files hold no item to score" + (f" (subset files missing: {', '.join(b.info['missing_subsets'])})"
                                                   if b.info.get("missing_subsets") else "")
    anchor = k.suite or b.name
    return f"{where}: no item to score: {why}; expected {k.form} laid out as docs/benchmarks.md#{anchor} shows"


def image_roots(spec: str, links: bool = True) -> list[Path]:
    """The folders a file benchmark's images must lie in: its DIR (a FILE's folder) and its
    IMAGE_ROOT, absolute; `links`: with links followed (resolved), else as the user named them."""
    k, _, path, third = parse(spec)
    # DIR, or a FILE's folder (karpathy:FILE); an IMAGE_ROOT is a folder (its reader refuses a file)
    roots = [Path(path) if Path(path).is_dir() else Path(path).parent] + ([Path(third)] if k.image_root and third else [])
    return [r.resolve() if links else Path(os.path.normpath(os.path.abspath(r))) for r in roots]


def _image_refs(b) -> list[tuple[str, str]]:
    """(where, file) of each distinct image file a loaded benchmark reads; a path holding a NUL
    byte (no file has such a name) is refused."""
    refs = [(where_, ref_file(r)) for r, where_ in b.items.first_use("images") if isinstance(r, str)] \
        if hasattr(b, "items") else [(f"{b.spec}: image {n}", ref_file(r)) for n, r in enumerate(b.images)
                                     if isinstance(r, str)]
    for where_, ref in refs:
        if "\0" in ref:
            raise UnbagError(f"{where_}: image path {ref!r} holds a NUL byte; no file has such a name")
    return refs


def fingerprint(read: list[Path], images: list[str]) -> str:
    """A hash of exactly the files a benchmark read, at their targets once links are followed:
    annotation files by content, the other files it read (Arrow shards, archives) and its images
    by size and modification time. No folder is walked: a re-pointed link or an edited caption
    changes it, a stray file or linked folder the benchmark never reads does not."""
    h = hashlib.sha256()
    for f in sorted({os.path.realpath(f) for f in read}):
        st = os.stat(f)
        h.update(f"{f}\0{st.st_size}\0".encode())
        if Path(f).suffix.lower() in ANNOTATIONS:
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        else:
            h.update(str(st.st_mtime_ns).encode())
    h.update(b"\0images\0")
    for ref in sorted({os.path.realpath(r) for r in images}):
        try:
            st = os.stat(ref)
            h.update(f"{ref}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except (OSError, ValueError):
            h.update(f"{ref}\0missing\0".encode())
    return h.hexdigest()


ANNOTATIONS = {".json", ".jsonl", ".csv", ".tsv", ".txt", ".parquet", ".toml", ".yaml", ".yml"}


def files_fingerprint(spec: str, outside_root: bool = False) -> str | None:
    """The fingerprint of the files a spec reads (`fingerprint`; None for generated benchmarks):
    the benchmark is read to know them. `outside_root`: it may read images anywhere."""
    if generated(spec):
        return None
    return load(spec, outside_root=outside_root).info["files"]


def load_item(spec: str, item_id: str, seed: int = 0) -> Benchmark:
    """The benchmark a spec names, restricted to one item (built alone where the benchmark can)."""
    k, _, path, third = parse(spec)
    if k.item is not None:
        return k.item(path, item_id, seed, third)
    return load(spec, seed=seed).only(item_id)


def generated(spec: str) -> bool:
    """Whether a spec names a benchmark unbag generates (no files: `ctrl`, `ctrl-retrieval:N`)."""
    k, _, path, _ = parse(spec)
    return not path or (not k.needs_dir and path.isdigit())


def stamp(spec: str, per_category: int | None = None, px: int | None = None) -> dict:
    """What a result made on the benchmark `spec` (generated with `per_category` items per
    category and split, where it takes a number, at side `px` where it was drawn at another than
    its world's: `drawn_size`) must have recorded of its generator: its world, renderer version,
    size and item count; {} where nothing is generated."""
    k, _, path, third = parse(spec)
    return k.stamp(path, third, per_category, px) if k.stamp and generated(spec) else {}


def drawn_size(spec: str, model_px: int | None) -> int | None:
    """The picture side a generated benchmark is drawn at for a model whose input side is
    `model_px` (`Kind.drawn_size`: ctrl at the model's side when larger than its world's, or the
    spec's own); None: its world's (or not generated)."""
    k, _, path, third = parse(spec)
    return k.drawn_size(path, third, model_px) if k.drawn_size and generated(spec) else None


def sized(spec: str) -> bool:
    """Whether the benchmark `spec` is generated with a number of items per category and split."""
    return kind(spec).sized is not None and generated(spec)


def summary(name: str) -> Summary:
    """How results of a benchmark (by the name its results record) are summarised."""
    k = BENCHMARKS.get(name)
    return k.summary if k and k.summary else DEFAULT_SUMMARY


def suite_folders(extra: bool = False) -> dict[str, list[str]]:
    """The compositionality suite: each folder `unbag suite` looks for under its root (in name
    order) and the benchmarks that read it for the suite average (`extra`: also those read beside
    it when asked, `Kind.suite_extra`)."""
    out: dict[str, list[str]] = {}
    for name, k in sorted(BENCHMARKS.items(), key=lambda x: (x[1].suite or "", x[0])):
        if k.suite and (extra or not k.suite_extra):
            out.setdefault(k.suite, []).append(name)
    return out


def pictures(bench) -> tuple[str, dict]:
    """What a benchmark's images are (`Kind.pictures`: photos or world) and the SGI options their
    world declares for them (a loaded benchmark's own, the 3D ctrl's `objects`; for a spec string
    what its kind tells from the spec, `Kind.sgi_of`); ("", {}) for unregistered ones. SGI holds
    what it reads each kind of picture with (sgi/config.py)."""
    if isinstance(bench, str):
        try:
            k, _, path, third = parse(bench)
        except UnbagError:
            return "", {}
        return k.pictures, (k.sgi_of(path, third) if k.sgi_of else {})
    k = BENCHMARKS.get(bench.name)
    return (getattr(bench, "pictures", "") or (k.pictures if k else "")), dict(getattr(bench, "sgi", None) or {})


def forms() -> str:
    """Every registered spec form, for help texts."""
    return " | ".join(k.form for k in BENCHMARKS.values())


__all__ = ["Benchmark", "Item", "Kind", "image_key", "load_image", "load", "load_item", "generated", "kind", "forms",
           "pictures", "sized", "files_fingerprint", "image_roots", "stamp", "summary", "suite_folders", "Summary", "Grid",
           "CTRL_GRID", "BENCHMARKS"]
