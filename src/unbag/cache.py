"""What one job remembers: a bounded least-recently-used map, and `JobCache`, the memory a job (a
plan, one `evaluate` call) lends the protocols it runs and drops when it ends."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, TypeVar

T = TypeVar("T")

# one plan scores the same images under several protocols and models of one image tower (the
# demo: about 0.2 GB of region embeddings); the bound keeps a long job over photo benchmarks small
DEFAULT_MAX_BYTES = 2 * 2**30


class LRU:
    """A map that keeps entries whose `size` sums to at most `max_size` (None: no bound), dropping
    the least recently used first; the newest entry is kept even when it alone is larger."""

    def __init__(self, max_size: int | None = None, size: Callable[[Any], int] = lambda v: 1):
        self.max_size, self.size, self.total = max_size, size, 0
        self._map: OrderedDict[Hashable, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._map

    def __iter__(self):
        return iter(self._map)  # least recently used first

    def get(self, key: Hashable, default: Any = None) -> Any:
        if key not in self._map:
            return default
        self._map.move_to_end(key)
        return self._map[key]

    def put(self, key: Hashable, value: Any) -> None:
        if key in self._map:
            self.total -= self.size(self._map.pop(key))
        self._map[key] = value
        self.total += self.size(value)
        while self.max_size is not None and self.total > self.max_size and len(self._map) > 1:
            self.total -= self.size(self._map.popitem(last=False)[1])

    def clear(self) -> None:
        self._map.clear()
        self.total = 0


class JobCache:
    """Named parts a job lends the protocols it runs (SGI's region embeddings and region searches,
    heads' frozen features): each part is made by its owner on first use, `make(max_bytes)`, and
    lives as long as this object. `evaluate` makes one per call unless given one; a plan shares
    one across its cells. Nothing is kept between jobs."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max_bytes
        self._parts: dict[Hashable, Any] = {}

    def part(self, key: Hashable, make: Callable[[int], T]) -> T:
        """The part named `key`, made by `make(max_bytes)` the first time it is asked for."""
        if key not in self._parts:
            self._parts[key] = make(self.max_bytes)
        return self._parts[key]

    def clear(self) -> None:
        """Drop every part (a cold start for the next protocol)."""
        self._parts.clear()


__all__ = ["DEFAULT_MAX_BYTES", "JobCache", "LRU"]
