"""vl_compo's published table (Oh et al., arXiv 2406.09388): the 12-benchmark compositionality suite
for 202 checkpoints, every subset included; third-party numbers, shown with their source.

Their harness was never released, so the rule that turns each benchmark's subset columns into its
headline is inferred here (`RULES`) and tested against every row (tests/reports/test_vl_compo.py);
`comp_avg` is the mean of the 12. `COLUMNS` maps each subset column to the unbag result (benchmark
and metric key) that measures the same thing, so that a user's results give the same headlines
and average, and a rank among the 202 (`place`). docs/benchmarks.md, "vl_compo", states both.
"""
from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).parent / "published" / "vl_compo"
SOURCE = "vl_compo (Oh et al. 2024, arXiv 2406.09388; github.com/ytaek-oh/vl_compo at 43e2eae)"
BENCHMARKS = ("aro", "colorswap", "crepe", "eqben", "imagecode", "mmvp_vlm", "sugarcrepe", "svo_probes", "valse",
              "vl_checklist", "whatsup", "winoground")

MMVP = ("Orientation and Direction", "Presence of Specific Features", "State and Condition", "Quantity and Count",
        "Positional and Relational Context", "Color and Appearance", "Structural Characteristics", "Texts",
        "Viewpoint and Perspective")
EQBEN = ("eqbenyoucook2", "eqbengebc", "eqbenag", "eqbenkubric_loc", "eqbenkubric_cnt", "eqbenkubric_attr", "eqbensd")
VALSE = (("existence",), ("plurals",), ("counting-hard", "counting-small-quant", "counting-adversarial"), ("relations",),
         ("action-replacement", "actant-swap"), ("coreference-standard", "coreference-hard"), ("foil-it",))
# SugarCrepe's items per subset (its release): vl_compo's headline is the mean over the three kinds of
# each kind's accuracy over its items
SUGARCREPE = {"replace": {"replace_obj": 1652, "replace_att": 788, "replace_rel": 1406},
              "swap": {"swap_obj": 245, "swap_att": 666}, "add": {"add_obj": 2062, "add_att": 692}}
IMAGECODE = {"videos": 1872, "static": 430}  # its validation set's descriptions per kind (2,302)
VLC = {"Object_Location_center": "center", "Object_Location_margin": "margin", "Object_Location_mid": "mid",
       "Object_Size_large": "large", "Object_Size_medium": "medium", "Object_Size_small": "small",
       "Attribute_action": "action_a", "Attribute_color": "color", "Attribute_material": "material",
       "Attribute_size": "size", "Attribute_state": "state", "Relation_action": "action_r", "Relation_spatial": "spatial"}
WHATSUP = {"WhatsUp_A": "controlled_a", "WhatsUp_B": "controlled_b", "COCO_QA_ONE": "coco_qa_one",
           "COCO_QA_TWO": "coco_qa_two", "VG_QA_ONE": "vg_qa_one", "VG_QA_TWO": "vg_qa_two"}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


# each benchmark's headline from its subset columns (get: column -> percent), as inferred
RULES: dict[str, Callable[[Callable[[str], float]], float]] = {
    "aro": lambda g: _mean([g(f"aro::{k}") for k in ("VG_Relation", "VG_Attribute", "Flickr30k_Order", "COCO_Order")]),
    "colorswap": lambda g: g("colorswap::group"),
    "crepe": lambda g: _mean([g(f"crepe::{k}") for k in ("atom", "swap", "negate")]),
    # the five datasets' group scores, Kubric's three averaged into one
    "eqben": lambda g: _mean([g("eqben::eqbenyoucook2::group"), g("eqben::eqbengebc::group"), g("eqben::eqbenag::group"),
                              _mean([g(f"eqben::{k}::group") for k in EQBEN[3:6]]), g("eqben::eqbensd::group")]),
    "imagecode": lambda g: sum(n * g(f"imagecode::{k}") for k, n in IMAGECODE.items()) / sum(IMAGECODE.values()),
    "mmvp_vlm": lambda g: _mean([g(f"mmvp_vlm::{t}::group") for t in MMVP]),
    "sugarcrepe": lambda g: _mean([sum(n * g(f"sugarcrepe::{k}") for k, n in kind.items()) / sum(kind.values())
                                   for kind in SUGARCREPE.values()]),
    "svo_probes": lambda g: _mean([g(f"svo_probes::{k}") for k in ("subj_neg", "verb_neg", "obj_neg")]),
    "valse": lambda g: _mean([_mean([g(f"valse::{k}") for k in piece]) for piece in VALSE]),
    "vl_checklist": lambda g: _mean([_mean([g(f"vl_checklist::{k}") for k in VLC if k.startswith(a)])
                                     for a in ("Object", "Attribute", "Relation")]),
    "whatsup": lambda g: _mean([g(f"whatsup::{k}") for k in WHATSUP]),
    "winoground": lambda g: g("winoground::group"),
}


def _columns() -> dict[str, tuple[str, tuple[str, ...]]]:
    """vl_compo column -> (unbag benchmark, the metric keys whose mean measures it)."""
    out = {"aro::VG_Relation": ("aro-vgr", ("macro/acc",)), "aro::VG_Attribute": ("aro-vga", ("macro/acc",)),
           "aro::Flickr30k_Order": ("aro-flickr-order", ("all/acc_official",)),
           "aro::COCO_Order": ("aro-coco-order", ("all/acc_official",))}
    out |= {f"colorswap::{m}": ("colorswap", (f"all/{m}",)) for m in ("text", "image", "group")}
    # CREPE's productivity negatives, R@1 (the official sort) averaged over the complexities 4 to 12
    out |= {f"crepe::{k}": ("crepe", tuple(f"prod-{k}-{n}/R@1_official" for n in range(4, 13)))
            for k in ("atom", "swap", "negate")}
    out |= {f"eqben::{d}::{m}": ("eqben", (f"{d}/{m}",)) for d in EQBEN for m in ("text", "image", "group")}
    out |= {"imagecode::videos": ("imagecode", ("video/acc_official",)),
            "imagecode::static": ("imagecode", ("static/acc_official",))}
    out |= {f"mmvp_vlm::{t}::{m}": ("mmvp-vlm", (f"{t.lower().replace(' ', '_')}/{m}",))
            for t in MMVP for m in ("text", "image", "group")}
    out |= {f"sugarcrepe::{k}": ("sugarcrepe", (f"{k}/acc",)) for kind in SUGARCREPE.values() for k in kind}
    out |= {f"svo_probes::{k}_neg": ("svo-probes", (f"{k}/pair",)) for k in ("subj", "verb", "obj")}
    out |= {f"valse::{k}": ("valse", (f"{k}/acc",)) for piece in VALSE for k in piece}
    out |= {f"vl_checklist::{k}": ("vl-checklist-1k", (f"category={c}/acc",)) for k, c in VLC.items()}
    out |= {f"whatsup::{k}": ("whatsup", (f"{s}/acc_official",)) for k, s in WHATSUP.items()}
    out |= {f"winoground::{m}": ("winoground", (f"all/{m}",)) for m in ("text", "image", "group")}
    return out


COLUMNS = _columns()


@dataclass(frozen=True)
class Row:
    """One published checkpoint: its open_clip model and pretrained tag (or a method and its data,
    for fine-tuned rows), its family, the 12 headlines and comp_avg (percent), every subset
    column (percent) and its ImageNet zero-shot top-1 (percent)."""
    arch: str
    pretrained: str
    family: str
    headlines: dict[str, float]
    comp_avg: float
    imagenet: float
    subsets: dict[str, float]

    @property
    def name(self) -> str:
        return f"{self.arch}@{self.pretrained}"


@functools.lru_cache(maxsize=1)
def rows() -> tuple[Row, ...]:
    """The 202 published rows, in the table's order (the two files' rows are the same checkpoints
    in the same order; one pair, CLIP_ViT-B-16@cc12m, appears twice with different numbers)."""
    with open(HERE / "results.csv", newline="") as f:
        heads = list(csv.DictReader(f))
    with open(HERE / "individual_results.csv", newline="") as f:
        subs = list(csv.DictReader(f))
    out = []
    for h, s in zip(heads, subs):
        cols = {k: float(v) for k, v in s.items() if "::" in k and v not in ("", None)}
        out.append(Row(h["arch"], h["pretrained"], h["family"], {b: float(h[b]) for b in BENCHMARKS},
                       float(h["comp_avg"]), float(h["imagenet"]), cols))
    return tuple(out)


AS_FILE = "published_as.txt"  # in a local model folder: the open_clip spec of the checkpoint it is a copy of


def checkpoint(model_spec: str) -> Row | None:
    """The published row of the checkpoint an open_clip spec names (`open_clip:ARCH@PRETRAINED`;
    ARCH-quickgelu for OpenAI's weights reads as ARCH), if exactly one row is that checkpoint. A
    local model folder says which checkpoint it is in its `published_as.txt` (one line, such a spec)."""
    folder = Path(model_spec.removeprefix("open_clip:local-dir:"))
    if (folder / AS_FILE).is_file():
        model_spec = (folder / AS_FILE).read_text(encoding="utf-8").strip()
    if not model_spec.startswith("open_clip:") or "@" not in model_spec:
        return None
    arch, _, tag = model_spec.removeprefix("open_clip:").partition("@")
    arches = {arch, arch.removesuffix("-quickgelu")}
    found = [r for r in rows() if r.arch in arches and r.pretrained == tag]
    return found[0] if len(found) == 1 else None


def published_metrics(row: Row) -> dict[str, dict[str, float]]:
    """A row's subset columns as unbag's metric keys (fractions), by unbag benchmark; a column that
    a mean of several unbag keys measures (CREPE's) is left out: no single key holds it."""
    out: dict[str, dict[str, float]] = {}
    for col, (bench, keys) in COLUMNS.items():
        if col in row.subsets and len(keys) == 1:
            out.setdefault(bench, {})[keys[0]] = row.subsets[col] / 100
    return out


def columns_of(results: list[dict]) -> dict[str, float]:
    """The vl_compo columns (percent) a model's results measure: each column whose unbag keys are
    all in its benchmark's results."""
    by = {r["benchmark"]["name"]: r["metrics"] for r in results}
    out = {}
    for col, (bench, keys) in COLUMNS.items():
        m = by.get(bench)
        if m is not None and all(k in m for k in keys):
            out[col] = 100 * _mean([m[k] for k in keys])
    return out


def headlines(cols: dict[str, float]) -> dict[str, float]:
    """The headlines (percent) of the benchmarks whose every column is given."""
    out = {}
    for b, rule in RULES.items():
        try:
            out[b] = rule(cols.__getitem__)
        except KeyError:
            continue
    return out


@dataclass(frozen=True)
class Placement:
    """Where a model's results stand among the published rows, on the benchmarks it has."""
    benchmarks: tuple[str, ...]  # the vl_compo benchmarks its results give (all 12, or fewer)
    average: float  # its mean over them, percent
    rank: int  # 1 = best, among the published rows and itself
    of: int
    above: tuple[tuple[str, float], ...]  # the (up to) three published rows just above it: name, mean
    below: tuple[tuple[str, float], ...]

    @property
    def partial(self) -> bool:
        return len(self.benchmarks) < len(BENCHMARKS)


def place(results: list[dict], near: int = 3) -> Placement | None:
    """A model's vl_compo average (over the benchmarks its results give, with vl_compo's rules) and
    its rank among the 202 published rows' means over the same benchmarks; None without any."""
    mine = headlines(columns_of(results))
    if not mine:
        return None
    names = tuple(b for b in BENCHMARKS if b in mine)
    avg = _mean([mine[b] for b in names])
    theirs = sorted(((r.name, _mean([r.headlines[b] for b in names])) for r in rows()
                     if all(math.isfinite(r.headlines[b]) for b in names)), key=lambda x: -x[1])
    rank = 1 + sum(v > avg for _, v in theirs)
    return Placement(names, avg, rank, len(theirs) + 1, tuple(theirs[max(0, rank - 1 - near):rank - 1]),
                     tuple(theirs[rank - 1:rank - 1 + near]))


def placement_text(model: str, p: Placement) -> str:
    """The lines a terminal or report says of a placement."""
    scope = ("the 12 benchmarks" if not p.partial else
             f"{len(p.benchmarks)} of the 12 benchmarks only ({', '.join(p.benchmarks)}; the others are missing, so "
             "this is not vl_compo's comp_avg and ranks on these alone)")
    fmt = lambda xs: ", ".join(f"{n} {v:.1f}" for n, v in xs) or "none"  # noqa: E731
    return (f"{model}: vl_compo average {p.average:.1f} over {scope}; rank {p.rank} of {p.of} among {SOURCE}'s "
            f"checkpoints (third-party numbers, rules inferred: docs/benchmarks.md#vl-compo). Just above: "
            f"{fmt(p.above)}. Just below: {fmt(p.below)}.")


def imagenet_of(results: list[dict]) -> float | None:
    """A model's ImageNet-1k zero-shot top-1 (percent) among its results, if it has one."""
    for r in results:
        if r["benchmark"].get("dataset") == "imagenet1k" and "all/zeroshot/top1" in r["metrics"]:
            return 100 * r["metrics"]["all/zeroshot/top1"]
    return None


def spread_figure(models: dict[str, list[dict]], out: Path, name: str = "figures/vl-compo.png") -> tuple | None:
    """The published checkpoints' vl_compo average against their ImageNet zero-shot top-1 (as
    vl_compo's own figure), with each of `models` (name -> its results) placed on it: a point where
    it has an ImageNet result, else a labelled line at its average. On the benchmarks every model
    has (all 12, or fewer, said in the title). (file, caption) under `out`, or None."""
    mine = {m: headlines(columns_of(rs)) for m, rs in models.items()}
    mine = {m: h for m, h in mine.items() if h}
    if not mine:
        return None
    common = tuple(b for b in BENCHMARKS if all(b in h for h in mine.values()))
    if not common:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    pub = [(r.imagenet, _mean([r.headlines[b] for b in common]), r.family) for r in rows()]
    tuned = [p for p in pub if p[2] == "StructuredCLIP"]
    ax.scatter([p[0] for p in pub if p[2] != "StructuredCLIP"], [p[1] for p in pub if p[2] != "StructuredCLIP"], s=10,
               color="#9AA5B1", label="vl_compo: pretrained checkpoints")
    ax.scatter([p[0] for p in tuned], [p[1] for p in tuned], s=16, marker="s", color="#C44E52",
               label="vl_compo: fine-tuned for compositionality (NegCLIP, DAC, ...)")
    for k, (m, h) in enumerate(mine.items()):
        y, x = _mean([h[b] for b in common]), imagenet_of(models[m])
        colour = plt.get_cmap("tab10")(k % 10)
        if x is not None:
            ax.scatter([x], [y], s=70, marker="*", color=colour, zorder=3)
            ax.annotate(m, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7, color=colour)
        else:
            ax.axhline(y, color=colour, ls="--", lw=1)
            ax.text(ax.get_xlim()[0], y, f" {m} (no ImageNet result)", fontsize=7, color=colour, va="bottom")
    ax.set_xlabel("ImageNet zero-shot top-1 %")
    scope = "the 12 benchmarks" if len(common) == len(BENCHMARKS) else f"{len(common)} of the 12 ({', '.join(common)})"
    ax.set_ylabel("vl_compo average %")
    ax.set_title(f"Your models among vl_compo's 202 checkpoints, on {scope}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name, (f"vl_compo average against ImageNet zero-shot top-1: the 202 published checkpoints ({SOURCE}, "
                  f"third-party) and your models, on {scope}")
