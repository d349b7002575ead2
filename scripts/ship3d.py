"""Ship what scripts/reship3d.sh staged: a 3D built-in model (`B` of its stage 7, today stage 9's
`builtin-pool`), its method overlays and every head, into src/unbag/weights.

The staged files name their model by its staged path (`reship/3d/builtin-pool`); shipped, the model
is `builtin`, so each overlay's `base` and each head's `backbone` are rewritten to the shipped
names. Heads check their backbone by a hash of its
weights, which shipping does not change: the script loads every shipped model and checks it.
A model that continued earlier staged runs (`pool-objects5` continued `pool-objects4`, which
continued ... `builtin-pool`) ships their configs too (`--earlier`, each as
`train_config-<stage>.json`, named by its staged folder: the recipe; their logs stay staged), and
the staged TRAINING.md and the methods' and heads' READMEs (written with what they describe) become
the shipped ones. Every staged file is checked before anything is written; only with
`--replace-shipped` is the new weights folder built beside the old one and swapped in whole.

    .venv/bin/python scripts/ship3d.py --staged STAGED/pool96 --earlier STAGED/builtin-pool STAGED/pool-objects \
        STAGED/pool-objects3 STAGED/pool-objects4 STAGED/pool-objects5            # checks and lists
    .venv/bin/python scripts/ship3d.py ... --replace-shipped                      # ships
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
W = ROOT / "src" / "unbag" / "weights"
METHODS = ("ft", "negclip", "clic", "degla", "ce-clip", "fsc-clip", "tripletclip")
MODELS = ("pretrained", "ft", "negclip", "clic", "degla")  # the models heads are shipped for
KINDS = ("tfregions", "tflocal-li", "tflocal", "tfglobal")


def plan(staged: Path, earlier: list[Path]) -> dict[str, tuple[Path, dict | None]]:
    """Shipped path -> (staged file, JSON fields to rewrite or None)."""
    out = {"builtin/weights.safetensors": (staged / "weights.safetensors", None),
           "builtin/open_clip_config.json": (staged / "open_clip_config.json", None),
           "builtin/log.jsonl": (staged / "log.jsonl", None),
           "builtin/train_config.json": (staged / "train_config.json", None),
           "builtin/TRAINING.md": (staged / "TRAINING.md", None),
           "methods/README.md": (staged / "methods" / "README.md", None),
           "heads/README.md": (staged / "heads" / "README.md", None)}
    for run in earlier:
        out[f"builtin/train_config-{run.name}.json"] = (run / "train_config.json", None)
    for m in METHODS:
        src = staged / "methods" / m
        out[f"methods/{m}/weights.safetensors"] = (src / "weights.safetensors", None)
        out[f"methods/{m}/log.jsonl"] = (src / "log.jsonl", None)
        out[f"methods/{m}/overlay.json"] = (src / "overlay.json", {"base": "builtin"})
    for m in MODELS:
        for k in KINDS:
            src = staged / "heads" / m / k
            out[f"heads/{k}/{m}/head.safetensors"] = (src / "head.safetensors", None)
            out[f"heads/{k}/{m}/head.json"] = (src / "head.json",
                                               {"backbone": "builtin" if m == "pretrained" else f"builtin:{m}"})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--staged", type=Path, required=True, help="the staged model folder (with methods/ and heads/)")
    p.add_argument("--replace-shipped", action="store_true",
                   help="replace src/unbag/weights; without it the staged files are checked and listed, nothing written")
    p.add_argument("--earlier", type=Path, nargs="*", default=[],
                   help="the staged runs the model continued, first to last (their configs ship too, "
                        "as train_config-<folder>.json)")
    a = p.parse_args()
    files = plan(a.staged, a.earlier)
    missing = [str(src) for src, _ in files.values() if not src.is_file()]
    if missing:
        sys.exit(f"ship3d: {len(missing)} staged files missing (stage 7 not finished?), first: {missing[:5]}")
    if not a.replace_shipped:  # the shipped weights are replaced only when asked by name
        for rel, (src, _) in sorted(files.items()):
            print(f"{src} -> {W / rel}")
        print(f"ship3d: {len(files)} staged files checked; run again with --replace-shipped to ship them")
        return
    new = W.with_name(".weights-ship.tmp")
    if new.exists():
        shutil.rmtree(new)  # a half-built tree of an earlier run of this script
    shutil.copytree(W / "proposer3d", new / "proposer3d")
    for rel, (src, fields) in files.items():
        dest = new / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if fields is None:
            shutil.copy2(src, dest)
            continue
        record = json.loads(src.read_text())
        record.update(fields)
        dest.write_text(json.dumps(record, indent=2) + "\n")
    old = W.with_name(".weights-old.tmp")
    W.rename(old)
    new.rename(W)
    try:
        check()
    except Exception:
        W.rename(new)
        old.rename(W)
        raise
    shutil.rmtree(old)
    print(f"shipped {len(files)} files from {a.staged} into {W}")


def check() -> None:
    """Every shipped model loads and every head accepts its model (the backbone hash)."""
    sys.path.insert(0, str(ROOT / "src"))
    from unbag import models
    from unbag.models.base import weights_id
    for m in MODELS:
        spec = "builtin" if m == "pretrained" else f"builtin:{m}"
        ident = weights_id(models.load(spec))
        for k in KINDS:
            head = json.loads((W / "heads" / k / m / "head.json").read_text())
            if head["backbone_id"] != ident:
                raise RuntimeError(f"heads/{k}/{m}: trained on weights {head['backbone_id'][:12]}, "
                                   f"{spec} ships {ident[:12]}")


if __name__ == "__main__":
    main()
