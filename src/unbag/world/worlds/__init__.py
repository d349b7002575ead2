"""unbag's worlds, each declared once in a module of this package (`flat.py`, `clevr3d.py`): what
the rest of the package asks about a world's pictures, items, streams and SGI settings. Adding a
world is adding one module here with its `WORLDS = {NAME: World(...)}` table.

A declaration's parts are plain imports inside its `parts` function, run when a part is first
asked for, so the registry costs nothing to import (`unbag --version` loads no renderer); the part
modules read the declaration's constants (its picture size) through `world.styles.world(NAME)`,
never by importing the declaration, so no two modules import each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ...utils import collect


@dataclass(frozen=True)
class World:
    """One world: its constants, and where its parts live ("module" or "module:attribute" under
    unbag.world)."""
    name: str  # what specs say after '@' (ctrl@NAME, world@NAME:DIST, swaps@NAME, ctrl-id@NAME)
    about: str
    px: int  # the side its pictures are drawn at unless asked: the input size of its built-in model
    ctrl_version: int  # the version a built ctrl folder of this world records (docs/ctrl-format.md)
    masks: bool  # whether a built ctrl folder carries instance masks
    parallel: bool  # whether drawing pays for worker processes (a 3D scene costs ~45 ms, a flat one ~1)
    cached: bool = False  # whether the items it draws for a generated ctrl are kept on disk (world/cache.py)
    sgi: dict = field(default_factory=dict)  # SGI's options on its pictures (sgi/config.py SGIConfig)
    # -> its parts by name: "renderer" (a module with render_version(px)), "stream" (a module with
    # sample, twin, distribution, describe and DISTRIBUTIONS), "swap" (a module with CATEGORIES,
    # SPLITS, VALUES and build_item), "shapes" (its shape nouns), "held_out" (obj -> whether it shows
    # a held-out combination), "item" ((seed, split, category, index, px, device) -> (SwapItem,
    # [RGB arrays], record fields)), "boxes" ((scene, px) -> each object's visible box or None),
    # "build" (writes a ctrl folder: (out, seed, per_category, px, categories, progress, overwrite,
    # procs, device, recipe))
    parts: Callable[[], dict] = dict
    # -> its distributions' names, cheaper than its stream module (the 3D one loads the renderer,
    # and torch; the CLI's help needs only the names)
    distribution_names: Callable[[], tuple] = tuple

    def part(self, name: str) -> Any:
        """One of its parts (`parts`), imported when first asked."""
        return self.parts()[name]

    def render_version(self, px: int | None = None) -> int:
        """The version of the pixels its renderer draws at side px (None: its own size)."""
        return self.part("renderer").render_version(self.px if px is None else px)

    def categories(self) -> tuple[str, ...]:
        return tuple(self.part("swap").CATEGORIES)

    def splits(self) -> tuple[str, ...]:
        return tuple(self.part("swap").SPLITS)

    def distributions(self) -> tuple[str, ...]:
        return tuple(self.distribution_names())

    def vocabulary(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """Its attribute words: sizes, colours, materials."""
        values = self.part("swap").VALUES
        return tuple(values["size"]), tuple(values["color"]), tuple(values["material"])

    def swap_item(self, seed: int, split: str, category: str, index: int, px: int, device: str | None = None) -> tuple:
        """(SwapItem, its two pictures [px, px, 3] uint8, its record fields) of one SWAP item (drawn
        on `device` where the world's renderer runs on torch; None: the CPU)."""
        return self.part("item")((seed, split, category, index, px, device))

    def swap_items(self, seed: int, per_category: int, px: int, categories: list[str] | None = None,
                   procs: int = 1, split: str | None = None, device: str | None = None) -> Iterator[tuple]:
        """`swap_item` of every item in file order (split, category, index), over `procs` processes
        (the same bytes for any number; one process on a GPU device)."""
        yield from self.draw(self.swap_jobs(seed, per_category, px, categories, split, device), procs)

    def swap_jobs(self, seed: int, per_category: int, px: int, categories: list[str] | None = None,
                  split: str | None = None, device: str | None = None) -> list[tuple]:
        """The `item` jobs (seed, split, category, index, px, device) of every item in file order."""
        cats = [c for c in self.categories() if categories is None or c in categories]
        return [(seed, s, c, i, px, device) for s in ([split] if split else self.splits()) for c in cats
                for i in range(per_category)]

    def draw(self, jobs: list[tuple], procs: int = 1) -> Iterator[tuple]:
        """`item` of each job in order, over `procs` processes (one where the jobs name a GPU)."""
        device = jobs[0][5] if jobs else None
        on_gpu = device is not None and not str(device).startswith("cpu")
        yield from ordered_map(self.part("item"), jobs, 1 if on_gpu else procs)

    def object_boxes(self, scene, px: int) -> list:
        return self.part("boxes")(scene, px)


def item_id(split: str, category: str, index: int) -> str:
    """A SWAP item's id in every world: '{split}-{category}-{index:04d}' (ood-color-0003)."""
    return f"{split}-{category}-{index:04d}"


def ordered_map(fn: Callable, jobs: list, procs: int, chunksize: int = 4) -> Iterator:
    """fn over jobs in order: here, or over `procs` spawned processes."""
    if procs <= 1:
        yield from map(fn, jobs)
        return
    from multiprocessing import get_context
    with get_context("spawn").Pool(procs) as pool:
        yield from pool.imap(fn, jobs, chunksize=chunksize)


def declared() -> dict[str, World]:
    """Every world declared in this package, by name (by module name)."""
    return collect(__name__, "WORLDS")
