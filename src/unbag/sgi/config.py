"""SGI's options: SGIConfig, what each takes and what a result records of it (docs/sgi.md)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..errors import UnbagError
from .regions import FILLS, FRAMES, RegionConfig

ASSIGN = ("max", "hungarian")
MATCH = ("kind", "all")
RELATIONS = ("cosine", "geometry")
COUNTS = ("off", "check", "fit")


@dataclass
class SGIConfig:
    """Options of the `sgi` protocol (all recorded in the results JSON)."""
    regions: str = "blobs+groups"
    mode: str = "mask"
    assign: str = "max"
    match: str = "kind"
    mix: float = 0.0
    segmenter: str = "auto"  # auto: the benchmark's own segments when it has them, else spaCy
    relations: str = "geometry"  # also check the spatial predicate on the chosen regions; cosine: do not
    relation_weight: float = 0.1
    scales: tuple[float, ...] = (0.5, 1 / 3)
    phases: int = 2  # mask mode: each region encoded at this many shifts against the patch grid, averaged
    frame: str = "pad"  # mask mode, non-square images: pad to a square (nothing lost) | crop (the encoder's)
    fill: str = "median"  # mask mode: what replaces the picture outside a region (median colour | each row's)
    # counted phrases must fit as many single regions as they say; fit: counting only the regions
    # that fit a description better than its average region (scenes with other objects); off: do not
    counts: str = "check"
    count_weight: float = 0.3
    cache_dir: str | None = None

    def __post_init__(self):
        if self.assign not in ASSIGN:
            raise UnbagError(f"unknown SGI assignment {self.assign!r}; use one of {', '.join(ASSIGN)}")
        if self.match not in MATCH:
            raise UnbagError(f"unknown SGI match policy {self.match!r}; use one of {', '.join(MATCH)}")
        if not 0.0 <= self.mix <= 1.0:
            raise UnbagError(f"SGI mix must be in [0, 1], got {self.mix}")
        if self.relations not in RELATIONS:
            raise UnbagError(f"unknown relation scoring {self.relations!r}; use one of {', '.join(RELATIONS)}")
        if not isinstance(self.phases, int) or self.phases < 1:
            raise UnbagError(f"SGI phases must be a whole number >= 1, got {self.phases!r}")
        if self.frame not in FRAMES:
            raise UnbagError(f"unknown SGI frame {self.frame!r}; use one of {', '.join(FRAMES)}")
        if self.fill not in FILLS:
            raise UnbagError(f"unknown SGI fill {self.fill!r}; use one of {', '.join(FILLS)}")
        if self.counts not in COUNTS:
            raise UnbagError(f"unknown SGI count handling {self.counts!r}; use one of {', '.join(COUNTS)}")
        if self.segmenter not in ("auto", "spacy", "rules"):
            raise UnbagError(f"unknown segmenter {self.segmenter!r}; use auto, spacy or rules")
        self.scales = _scales(self.scales)
        self.region_cfg = RegionConfig.parse(self.regions, self.mode, scales=self.scales)

    @classmethod
    def from_options(cls, options: dict) -> "SGIConfig":
        """A config from keyword options (CLI flags, plan tables, API keywords); an unknown name
        is an error that lists the options."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise UnbagError(f"unknown SGI option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                             f"SGI takes: {', '.join(names)}")
        for name in ("mix", "relation_weight", "count_weight"):
            if name in options and not isinstance(options[name], (int, float)):
                raise UnbagError(f"SGI option {name} must be a number, got {options[name]!r}")
        return cls(**options)

    @classmethod
    def for_benchmark(cls, bench) -> "SGIConfig":
        """unbag's SGI with the options a benchmark (a loaded one, or its name) declares for its
        images (photos: `selective`; 3D ctrl: `objects`)."""
        from ..benchmarks import sgi_defaults
        return cls.from_options(sgi_defaults(bench))

    def record(self) -> dict:
        """The options as a result records them; with learned regions, the proposer's weights too
        (other weights find other boxes, so a result made with them is not reused)."""
        out = {k: v for k, v in asdict(self).items() if k != "cache_dir"}
        if self.region_cfg.source == "objects":
            from .proposer import weights_id
            out["proposer"] = weights_id()
        return out


def _scales(value) -> tuple[float, ...]:
    """Grid window sides as fractions of the image side in (0, 1], from '0.5,0.333' or numbers."""
    try:
        vals = tuple(float(x) for x in (value.split(",") if isinstance(value, str) else value))
    except (TypeError, ValueError):
        raise UnbagError(f"SGI scales are comma-separated numbers, got {value!r}") from None
    if not vals or not all(0 < v <= 1 for v in vals):
        raise UnbagError(f"SGI scales are fractions of the image side in (0, 1], got {value!r}")
    return vals
