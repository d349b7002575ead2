#!/usr/bin/env bash
# Retrain the shipped weights on the 3D world, one stage after another. A finished stage leaves its
# result under reship/3d/ (committed: packed weights, logs and configs, a few MB), so a later
# session goes on from there; pools and checkpoints live under RUNS_DIR and are rebuilt, bit for
# bit, when missing (pools from their seed; a run resumes from its last checkpoint).
#   1. the built-in model: `clip-dense` from random weights on a 40,960-sample pool of the 3D
#      pretraining stream (2026-12-02: the pool in 38 min on one core, 3,000 steps in about 45 min
#      on 2 cores), then measured on the 3D ctrl (global, sgi, sgi:paper).
# Not written yet (issue 35): the FT / NegCLIP / CLIC / DeGLA overlays on a 3D fine-tuning pool,
# the heads on `swaps3d` features, and shipping (replacing src/unbag/weights/).
# Usage: bash scripts/reship3d.sh [RUNS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-runs/reship3d}
S=reship/3d
U=.venv/bin/unbag
PY=.venv/bin/python
mkdir -p "$R" "$S"

pool() {  # DIST N SEED: render a pool of the 3D stream once
  [ -f "$R/pool-$1/meta.json" ] || $U world pool --data "world3d:$1" --n "$2" --seed "$3" --procs 2 \
      --out "$R/pool-$1" --quiet
}

if [ ! -f "$S/builtin/weights.safetensors" ]; then
  pool pretraining 40960 0
  [ -f "$R/builtin/model/open_clip_config.json" ] || $U train --method clip-dense \
      --model open_clip:unbag-tiny@random --data "pool:$R/pool-pretraining" --steps 3000 --batch-size 128 \
      --lr 1e-3 --warmup 100 --seed 0 --vocabulary 3d --out "$R/builtin" --quiet \
      $( [ -f "$R/builtin/ckpt/trainer.pt" ] && echo --resume )
  $PY -c "from unbag.models.overlay import save_builtin; save_builtin('$R/builtin', 'open_clip:unbag-tiny@random', 0, '$S/builtin')"
  cp "$R/builtin/log.jsonl" "$S/builtin/log.jsonl"
  cp "$R/builtin/config.json" "$S/builtin/train_config.json"
fi
# the 3D ctrl (seed 0, 100 items per category and split) and stage 1 measured on it
[ -f "$R/ctrl3d/meta.json" ] || $U world build --style 3d --seed 0 --per-category 100 --procs 2 --out "$R/ctrl3d" --quiet
for p in global sgi sgi:paper; do
  f="$S/builtin/ctrl3d-${p/:/-}.json"
  [ -f "$f" ] || { $U eval --model "$S/builtin" --bench "ctrl:$R/ctrl3d" --protocol "$p" --out "$R/${f##*/}" --quiet \
                   && cp "$R/${f##*/}" "$f"; }
done
