"""What a registered benchmark declares: how its spec reads and loads (`Kind`), and how its
results are summarised (`Summary`, or a `Grid` shared by the generated world's benchmarks)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Grid:
    """A benchmark scored per split x category (ctrl). Reports show one row per model and protocol:
    a column per category (its ID and OOD `metric`), the OOD mean over `average`, then the columns
    `joined` from the results of benchmarks that share the grid (ctrl-retrieval's recall); a bar
    chart per category and an ID-vs-OOD scatter over `average`."""
    name: str  # the section's name in reports
    categories: tuple[str, ...]
    average: tuple[str, ...]  # the categories of the OOD mean column
    chance: float  # of `metric`, drawn in the charts
    note: str  # what the numbers are, under the tables
    joined: tuple[tuple[str, str], ...] = ()  # (header, metric key) from the grid's other benchmarks
    joined_title: str = ""  # the title of the joined values' table
    splits: tuple[str, ...] = ("id", "ood")
    metric: str = "group"
    metrics: tuple[str, ...] = ()  # every metric its cells hold (ctrl: text, image, group); (): `metric` alone

    def key(self, split: str, category: str) -> str:
        return f"{split}/{category}/{self.metric}"

    def mean(self, values: dict, split: str) -> float | None:
        """The mean of `split`'s scores over `average` (values: metric key -> number), when a row has them all."""
        got = [values.get(self.key(split, c)) for c in self.average]
        return None if None in got else sum(got) / len(got)

    def holds(self, metrics: dict) -> bool:
        """Whether results hold the grid's own scores (not only columns it joins)."""
        return any(self.key(s, c) in metrics for s in self.splits for c in (*self.categories, "all"))

    @property
    def mean_header(self) -> str:
        return f"{self.splits[-1].upper()} avg {'/'.join(c[0] for c in self.average)}"


@dataclass(frozen=True)
class Summary:
    """How a benchmark's results are summarised in reports and in `unbag run`'s printed tables: its
    table's columns (metric keys; a `*` stands for any subset name), the headline metric its chart
    draws (or several: the first a result has), display names for metric names (BiVLC calls the
    text score I2T), and the metric that joins the report's general-ability mean, if any."""
    columns: tuple[str, ...]
    chart: str | tuple[str, ...]
    names: dict = field(default_factory=dict)
    general: str | None = None
    grid: Grid | None = None  # results shown in this grid's table instead of a table of their own
    # its score in the suite table: the mean of these keys (FSC-CLIP's per-benchmark average); ():
    # its headline
    suite: tuple[str, ...] = ()

    def headline(self, metrics: set[str] | dict) -> str | None:
        """The chart's metric among `metrics`."""
        return next((k for k in ((self.chart,) if isinstance(self.chart, str) else self.chart) if k in metrics), None)

    def suite_keys(self, metrics: dict) -> list[str]:
        """The keys its suite score averages: the `suite` keys present, or its headline."""
        if self.suite:
            return [k for k in self.suite if k in metrics]
        key = self.headline(metrics)
        return [] if key is None else [key]

    def suite_score(self, metrics: dict) -> float | None:
        """Its score in the suite table: the mean of its `suite_keys`."""
        keys = self.suite_keys(metrics)
        return sum(metrics[k] for k in keys) / len(keys) if keys else None

    def keys(self, metrics: set[str]) -> list[str]:
        """The columns present among `metrics`, patterns expanded in sorted order, each key once."""
        out: list[str] = []
        for pat in self.columns:
            if "*" not in pat:
                found = [pat] if pat in metrics else []
            else:
                rx = re.compile("^" + ".+".join(re.escape(p) for p in pat.split("*")) + "$")
                found = sorted(k for k in metrics if rx.match(k))
            out += [k for k in found if k not in out]
        return out

    def declares(self, key: str) -> bool:
        """Whether `key` is a metric this benchmark's results can hold, as far as its declaration
        tells before it is scored: one of its columns (a `*` any subset), its chart's or suite
        keys, an `all/` or `macro/` key, or a cell of its grid (splits and categories, or `all`)."""
        pats = (*self.columns, *((self.chart,) if isinstance(self.chart, str) else self.chart), *self.suite,
                "all/*", "macro/*")
        if any(re.fullmatch(".+".join(re.escape(p) for p in pat.split("*")), key) for pat in pats if pat):
            return True
        g, parts = self.grid, key.split("/")
        return g is not None and len(parts) == 3 and parts[0] in (*g.splits, "all") \
            and parts[1] in (*g.categories, "all") and parts[2] in (g.metrics or (g.metric,))

    def label(self, key: str) -> str:
        head, _, metric = key.rpartition("/")
        return f"{head}/{self.names.get(metric, metric)}" if head else self.names.get(metric, metric)


# every benchmark whose own declaration is missing (a Benchmark built in Python) is shown so
DEFAULT_SUMMARY = Summary(("macro/*", "all/*"), "")


@dataclass(frozen=True)
class Kind:
    """A registered benchmark."""
    form: str  # how its spec reads, for help and errors
    loader: Callable  # (path, third part or None, seed) -> Benchmark | RetrievalSet | ClassificationSet
    needs_dir: bool = True  # reads a local copy of an official release
    image_root: bool = False  # takes NAME:DIR:IMAGE_ROOT (annotations and images kept apart)
    dataset: bool = False  # takes NAME:DIR:DATASET (a standard dataset's name, for its built-in prompts)
    global_only: bool = False  # every image against every text (retrieval, classification)
    # what its images are, for the options SGI reads them with (sgi/config.py PICTURE_DEFAULTS):
    # "photos", or "world" (a world's scenes: the world's declaration gives them, `sgi_of` reads it)
    pictures: str = "photos"
    summary: Summary | None = None  # its report table and chart; None: DEFAULT_SUMMARY
    # one item by id (spec's path, id, seed) without building the whole benchmark, and the items
    # `unbag run` draws SGI explanations of by default
    item: Callable | None = None
    explain: tuple[str, ...] = ()
    # a generated benchmark of another size or world (spec's path, seed, items per category and
    # split or None, style or None, picture side or None, device or None, progress bar or not)
    sized: Callable | None = None
    # the picture side a generated benchmark is drawn at for a model reading pictures of a given
    # side (spec's path, world or None, the model's side or None -> side, or None for its world's)
    drawn_size: Callable | None = None
    # what a generated benchmark records of its generator (spec's path, world or None, items per
    # category and split or None, picture side or None -> info values): a result that recorded
    # others was made in another world, by another renderer, at another size or on other items,
    # and `unbag run` makes it again
    stamp: Callable | None = None
    # generated in any declared world: NAME@WORLD (plain NAME: the default world, world/styles.py);
    # its loader gets the world where others get their third part
    worlds: bool = False
    # the SGI options a spec's images call for beyond `sgi`, told from the spec alone (spec's path,
    # third part): what the loaded benchmark carries as its `sgi`, so that `unbag run` can tell
    # whether a finished cell was scored with today's options without loading the benchmark
    sgi_of: Callable | None = None
    # the folder under `unbag suite`'s ROOT that holds its DIR (several kinds may read one release);
    # None: not part of the compositionality suite
    suite: str | None = None
    # another reading of a suite folder's release (VL-CheckList's every item beside the official
    # run's first 1,000 a file): `unbag suite --all-items` adds it, shown beside and never averaged
    suite_extra: bool = False
    release: str = ""  # where its official release is downloaded (`unbag suite` says it for a missing one)



# summaries several benchmarks share
PAIRWISE = Summary(("macro/acc", "all/acc", "*/acc"), "macro/acc")
TWO_BY_TWO = Summary(("all/text", "all/image", "all/group", "all/groupmatch"), "all/group")
RETRIEVAL = Summary(tuple(f"all/retrieval/{d}/R@{k}" for d in ("i2t", "t2i") for k in (1, 5, 10)),
                    "all/retrieval/i2t/R@1")
ZERO_SHOT = Summary(("all/zeroshot/top1", "all/zeroshot/top5", "all/zeroshot/mean_per_class_recall"),
                    "all/zeroshot/top1", general="all/zeroshot/top1")
