"""Test items, and a benchmark's items in flat memory (hundreds of thousands of them).

An `Item` is one test: images x captions. `Items` holds a benchmark's items as integer columns over
tables of what they share: each distinct image reference, caption, group and meta dict is held
once, and an id or source is an interned head ('sugarcrepe-add_att-') and a short tail ('123') in
one byte buffer. A VL-CheckList item then costs about 70 bytes instead of a kilobyte of Python
objects (bench/items_memory.py). An `Item` is made when one is read: a fresh one each time, so
changing it changes nothing here; its group and meta dicts are the shared ones (never change them).
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence, Union

import numpy as np

# a file path (optionally "PATH#crop=x,y,w,h"), a member of a zip archive ("ARCHIVE#member=NAME"),
# a cell of an Arrow file ("FILE#arrow=ROW,COLUMN"), pixels [H, W, 3] uint8, or encoded image bytes
ImageRef = Union[str, np.ndarray, bytes]


@dataclass(slots=True)
class Item:
    """One test item: images x captions; caption i belongs to image i (for 2x2 items)."""
    id: str
    images: list[ImageRef]
    captions: list[str]
    group: dict[str, str]  # e.g. {"split": "ood", "category": "color"}
    meta: dict = field(default_factory=dict)  # segments, objects, held-out combos...
    source: str | None = None  # "file:line" the item came from, for error messages


def _split(text: str) -> tuple[str, str]:
    """(head, tail): the tail is the text's trailing digits, the head the rest."""
    k = len(text)
    while k and text[k - 1].isdigit():
        k -= 1
    return text[:k], text[k:]


class _Strings:
    """Strings that mostly differ in trailing digits: interned heads and a buffer of tails."""
    __slots__ = ("heads", "index", "head", "tails", "ends")

    def __init__(self) -> None:
        self.heads: list[str | None] = []
        self.index: dict = {}
        self.head, self.tails, self.ends = array("i"), bytearray(), array("q", [0])

    def add(self, text: str | None) -> None:
        h, t = (None, "") if text is None else _split(text)
        k = self.index.get(h)
        if k is None:
            k = self.index[h] = len(self.heads)
            self.heads.append(h)
        self.head.append(k)
        self.tails += t.encode()
        self.ends.append(len(self.tails))

    def __getitem__(self, n: int) -> str | None:
        h = self.heads[self.head[n]]
        return None if h is None else h + self.tails[self.ends[n]:self.ends[n + 1]].decode()


class _Store:
    """The columns of every item appended, and the tables they index."""
    __slots__ = ("refs", "ref_index", "captions", "caption_index", "groups", "group_index", "metas",
                 "meta_index", "img", "img_end", "cap", "cap_end", "group", "meta", "ids", "sources")

    def __init__(self) -> None:
        self.refs: list = []
        self.captions: list[str] = []
        self.groups: list[dict] = []
        self.metas: list[dict] = [{}]  # 0: no meta (an empty dict made afresh when read)
        self.ref_index, self.caption_index, self.group_index, self.meta_index = {}, {}, {}, {}
        self.img, self.img_end, self.cap, self.cap_end = array("i"), array("q", [0]), array("i"), array("q", [0])
        self.group, self.meta = array("i"), array("i")
        self.ids, self.sources = _Strings(), _Strings()

    @staticmethod
    def _intern(table: list, index: dict, key, value) -> int:
        k = index.get(key)
        if k is None:
            k = index[key] = len(table)
            table.append(value)
        return k

    def add(self, it: Item) -> None:
        for r in it.images:  # a path by its text; pixels and bytes by identity (the table keeps them alive)
            self.img.append(self._intern(self.refs, self.ref_index, r if isinstance(r, str) else id(r), r))
        self.img_end.append(len(self.img))
        for c in it.captions:
            self.cap.append(self._intern(self.captions, self.caption_index, c, c))
        self.cap_end.append(len(self.cap))
        try:
            key = tuple(it.group.items())
            hash(key)
        except TypeError:
            key = ("id", id(it.group))
        self.group.append(self._intern(self.groups, self.group_index, key, it.group))
        self.meta.append(self._intern(self.metas, self.meta_index, id(it.meta), it.meta) if it.meta else 0)
        self.ids.add(it.id)
        self.sources.add(it.source)

    def item(self, n: int) -> Item:
        m = self.meta[n]
        return Item(self.ids[n], [self.refs[j] for j in self.img[self.img_end[n]:self.img_end[n + 1]]],
                    [self.captions[j] for j in self.cap[self.cap_end[n]:self.cap_end[n + 1]]],
                    self.groups[self.group[n]], self.metas[m] if m else {}, self.sources[n])


class Items(Sequence):
    """A benchmark's items in flat memory (see the module's docstring): a sequence of `Item`s,
    appended one by one or made from a list; a slice or `take` is a view on the same store."""
    __slots__ = ("_store", "_rows")

    def __init__(self, items: Iterable[Item] = (), *, _store: _Store | None = None, _rows: np.ndarray | None = None):
        self._store = _store or _Store()
        self._rows = _rows  # the store's rows in this view; None: all of them
        for it in items:
            self.append(it)

    def append(self, it: Item) -> None:
        """Add an item (to the whole store; a view cannot grow)."""
        if self._rows is not None:
            raise TypeError("a view of items cannot grow")
        self._store.add(it)

    def rows(self) -> np.ndarray:
        """The store's row of each item here."""
        return np.arange(len(self._store.group)) if self._rows is None else self._rows

    def __len__(self) -> int:
        return len(self._store.group) if self._rows is None else len(self._rows)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.take(self.rows()[key], rows=True)
        n = len(self)
        if not -n <= key < n:
            raise IndexError(f"item {key} of {n}")
        return self._store.item(int(self.rows()[key]) if self._rows is not None else key % n)

    def __iter__(self) -> Iterator[Item]:
        item = self._store.item
        return (item(int(r)) for r in self.rows())

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __repr__(self) -> str:
        return f"Items({len(self)} items)"

    def take(self, idx: Sequence[int] | np.ndarray, rows: bool = False) -> Items:
        """The items at positions `idx` (or at the store's `rows`), as a view."""
        idx = np.asarray(idx, dtype=np.int64)
        return Items(_store=self._store, _rows=idx if rows or self._rows is None else self._rows[idx])

    def groups(self) -> list[dict]:
        """Each item's group dict (the shared ones)."""
        g = self._store.groups
        return [g[k] for k in np.asarray(self._store.group)[self.rows()].tolist()]

    def distinct_groups(self) -> list[tuple[dict, str]]:
        """Each distinct group dict these items use, and the item that first uses it (its source or id)."""
        s, rows = self._store, self.rows()
        used, first = np.unique(np.asarray(s.group)[rows], return_index=True)
        return [(s.groups[g], s.sources[r] or s.ids[r]) for g, r in zip(used.tolist(), rows[first].tolist())]

    def shapes(self) -> dict[tuple[int, int], np.ndarray]:
        """The positions of the items of each shape (images, captions), in order of first appearance."""
        rows, s = self.rows(), self._store
        ni = np.diff(np.asarray(s.img_end))[rows]
        nc = np.diff(np.asarray(s.cap_end))[rows]
        key = ni.astype(np.int64) * (1 << 32) + nc
        kinds, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return {(int(ni[f]), int(nc[f])): np.flatnonzero(inverse == k) for k, f in sorted(enumerate(first),
                                                                                           key=lambda x: x[1])}

    def _column(self, which: str) -> tuple[list, np.ndarray]:
        """(the distinct values these items use, each item's indices into them [n, k]): items of
        one shape only."""
        s, rows = self._store, self.rows()
        flat, end, table = (s.img, s.img_end, s.refs) if which == "images" else (s.cap, s.cap_end, s.captions)
        end = np.asarray(end)
        k = set(np.diff(end)[rows].tolist()) if len(rows) else {0}
        if len(k) != 1:
            raise ValueError(f"items of several shapes ({sorted(k)} {which}): take one shape at a time")
        k = k.pop()
        at = np.asarray(flat)[end[rows][:, None] + np.arange(k)] if k else np.zeros((len(rows), 0), np.int64)
        used, inverse = np.unique(at, return_inverse=True)
        return [table[j] for j in used.tolist()], inverse.reshape(len(rows), k)

    def images(self) -> tuple[list[ImageRef], np.ndarray, list[str]]:
        """(the distinct image references these items use, each item's indices into them [n, images],
        where each is first used: 'SOURCE: field images[k]', for error messages)."""
        refs, at = self._column("images")
        _, first = np.unique(at.reshape(-1), return_index=True)
        k, s, rows = max(at.shape[1], 1), self._store, self.rows()
        wheres = [f"{s.sources[r] or s.ids[r]}: field 'images[{f % k}]'"
                  for r, f in zip(rows[first // k].tolist(), first.tolist())]
        return refs, at, wheres

    def captions(self) -> tuple[list[str], np.ndarray]:
        """(the distinct captions these items use, each item's indices into them [n, captions])."""
        return self._column("captions")

    def first_use(self, which: str = "images") -> Iterator[tuple[object, str]]:
        """Each distinct image reference (or caption) and where it is first used ('SOURCE: field
        images[k]'), in order of first use."""
        s, seen = self._store, set()
        flat, end = (s.img, s.img_end) if which == "images" else (s.cap, s.cap_end)
        for r in self.rows().tolist():
            for k, j in enumerate(flat[end[r]:end[r + 1]]):
                if j not in seen:
                    seen.add(j)
                    yield (s.refs if which == "images" else s.captions)[j], \
                        f"{s.sources[r] or s.ids[r]}: field '{which}[{k}]'"

    def duplicate_id(self) -> tuple[int, int] | None:
        """The positions of the first item whose id an earlier item has, and of that earlier one."""
        ids = self._store.ids
        rows = self.rows().tolist()
        hashes = np.array([hash(ids[r]) for r in rows], dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        same = np.flatnonzero(hashes[order][1:] == hashes[order][:-1])
        first: dict[str, int] = {}
        # only items whose hash another shares can repeat an id: compare their ids, in order
        for a in np.unique(np.concatenate([order[same], order[same + 1]])).tolist():
            b = first.setdefault(ids[rows[a]], a)
            if b != a:
                return a, b
        return None
