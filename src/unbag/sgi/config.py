"""SGI's options: SGIConfig, what each takes and what a result records of it (docs/sgi.md)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from ..errors import UnbagError
from .regions import FILLS, FRAMES, REGION_SOURCES, RegionConfig

ASSIGN = ("max", "hungarian")
MATCH = ("kind", "all")
RELATIONS = ("cosine", "geometry")
COUNTS = ("off", "check", "fit")


def _opt(default, help: str, flag: str | None = None):
    """A field of SGIConfig with its command-line help (the CLI's flags are made from these:
    `--NAME`, or `flag`)."""
    return field(default=default, metadata={"help": help, **({"flag": flag} if flag else {})})


@dataclass
class SGIConfig:
    """Options of the `sgi` protocol (all recorded in the results JSON)."""
    regions: str = _opt("blobs+groups", "gt | grid | proposals | blobs | selective | objects (3D scenes: the learned proposer) | "
                        "chroma (experimental: 3D colour components), optionally +groups (defaults: objects on the 3D ctrl, "
                        "blobs+groups on the flat ctrl, selective on photos and free images)")
    mode: str = _opt("mask", "mask (default: keep in place) | tokens (a ViT encodes only the patches a region covers: "
                     "faster, weaker; docs/sgi.md) | crop (zoom)", flag="--region-mode")
    assign: str = _opt("max", "max (default, the paper's) | hungarian (one-to-one)")
    match: str = _opt("kind", "kind (default: object segments -> single regions) | all")
    mix: float = _opt(0.0, "weight of the global score (default 0)")
    # auto: the benchmark's own segments when it has them, else spaCy
    segmenter: str = _opt("auto", "auto (default) | spacy | rules")
    # also check the spatial predicate on the chosen regions; cosine: do not
    relations: str = _opt("geometry", "geometry (default: also check left/right/above/below/front/behind between the "
                          "chosen regions) | cosine (the paper's)")
    relation_weight: float = _opt(0.1, "weight of the geometry check (0.1)")
    scales: tuple[float, ...] = _opt((0.5, 1 / 3), "grid window sides as fractions, e.g. 0.5,0.333")
    # mask mode: each region encoded at this many shifts against the patch grid, averaged
    phases: int = _opt(2, "mask mode: encode each region at N shifts against the patch grid (diagonal, k/N of a "
                       "patch) and average (default 2; the 3D ctrl and photos 1 = one view)")
    # mask mode, non-square images: pad to a square (nothing lost) | crop (the encoder's)
    frame: str = _opt("pad", "non-square images: pad (default: pad to a square with the background colour, nothing "
                      "lost) | crop (the square the encoder's preprocessing keeps)")
    # mask mode: what replaces the picture outside a region (median colour | each row's)
    fill: str = _opt("median", "mask mode: what replaces the picture outside a region: median (default: its median "
                     "colour) | rows (each row's median: a floor seen in perspective; the 3D ctrl's default)")
    # counted phrases must fit as many single regions as they say; fit: counting only the regions
    # that fit a description better than its average region (scenes with other objects); off: do not
    counts: str = _opt("check", "check (default: a counted phrase must fit as many single regions as it says) | fit "
                       "(the same, counting only regions that fit a description better than its average region: the "
                       "3D ctrl's default) | off (the paper's)")
    count_weight: float = _opt(0.3, "weight of the count check (0.3)")
    cache_dir: str | None = _opt(None, "keep region features on disk here")

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
        """unbag's SGI with the options a benchmark's images call for (a loaded one, or its name;
        photos: `selective`; 3D ctrl: `objects`)."""
        return cls.from_options(sgi_defaults(bench))

    def record(self) -> dict:
        """The options as a result records them; with learned regions, the proposer's weights too
        (other weights find other boxes, so a result made with them is not reused)."""
        out = {k: v for k, v in asdict(self).items() if k != "cache_dir"}
        learned = REGION_SOURCES[self.region_cfg.source].weights_id
        if learned is not None:
            out["proposer"] = learned()
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


# SGI's options by what a benchmark's images are (`Kind.pictures`). Photographs: regions from
# hierarchical grouping of segments (`selective`, eight boxes and the whole image), one view each;
# `blobs` (the default) are for scenes on a plain background. No unions: over eight boxes they
# would multiply the encoder passes (docs/sgi.md, "Photos"). A world's scenes: what the world
# declares (world/worlds/: the 3D world's learned `objects`; the flat world's none).
PICTURE_DEFAULTS: dict[str, dict] = {"photos": {"regions": "selective", "phases": 1}, "world": {}}


def sgi_defaults(bench) -> dict:
    """The SGI options a benchmark's images call for (a loaded benchmark or a spec): its kind of
    pictures' (PICTURE_DEFAULTS), then its world's; {} for unregistered ones."""
    from ..benchmarks import pictures
    kind, declared = pictures(bench)
    return dict(PICTURE_DEFAULTS.get(kind, {})) | declared
