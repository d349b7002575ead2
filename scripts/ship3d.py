"""Ship what scripts/reship3d.sh staged: a 3D built-in model (`B` of its stage 7, today stage 9's
`builtin-pool`), its method overlays and every head, into src/unbag/weights.

The staged files name their model by its staged path (`reship/3d/builtin-pool`); shipped, the model
is `builtin`, so each overlay's `base` and each head's `backbone` are rewritten to the shipped
names, the staged one kept beside it (`staged_as`). Heads check their backbone by a hash of its
weights, which shipping does not change: the script loads every shipped model and checks it.
A model that continued earlier staged runs (`pool-objects5` continued `pool-objects4`, which
continued ... `builtin-pool`) ships their logs and configs too (`--earlier`, each as
`log-<stage>.jsonl` and `train_config-<stage>.json`, named by its staged folder), and the staged TRAINING.md and the methods' and
heads' READMEs (written with what they describe) become the shipped ones. Every staged file is
checked before anything is written; the new weights folder is built beside the old one and swapped in whole.

    .venv/bin/python scripts/ship3d.py [--staged reship/3d/builtin-pool]
    .venv/bin/python scripts/ship3d.py --staged reship/3d/pool-objects5 --earlier reship/3d/builtin-pool \
        reship/3d/pool-objects reship/3d/pool-objects3 reship/3d/pool-objects4
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
W = ROOT / "src" / "unbag" / "weights"
METHODS = ("ft", "negclip", "clic", "degla")
MODELS = ("pretrained",) + METHODS
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
        out[f"builtin/log-{run.name}.jsonl"] = (run / "log.jsonl", None)
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
    p.add_argument("--staged", type=Path, default=ROOT / "reship" / "3d" / "builtin-pool")
    p.add_argument("--earlier", type=Path, nargs="*", default=[],
                   help="the staged runs the model continued, first to last (their logs and configs "
                        "ship too, as log-<folder>.jsonl and train_config-<folder>.json)")
    a = p.parse_args()
    files = plan(a.staged, a.earlier)
    missing = [str(src) for src, _ in files.values() if not src.is_file()]
    if missing:
        sys.exit(f"ship3d: {len(missing)} staged files missing (stage 7 not finished?), first: {missing[:5]}")
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
        for key, value in fields.items():
            record["staged_as"] = record[key]
            record[key] = value
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
