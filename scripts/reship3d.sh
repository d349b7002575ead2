#!/usr/bin/env bash
# Rebuild today's shipped weights (src/unbag/weights/; the recipe: weights/builtin/TRAINING.md and
# docs/model-card.md), one step after another, on 2 CPU cores. A finished step leaves its result
# under RUNS_DIR/staged/ (packed weights, logs and configs, a few MB), so a later session goes on
# from there; pools and checkpoints live under RUNS_DIR and are rebuilt, bit for bit, when missing
# (pools from their seed; a run resumes from its last checkpoint). Nothing here writes the package:
# only `python scripts/ship3d.py --replace-shipped` does, and only when told to.
#   1. pretrain: `clip-dense` from random weights on `unbag-tiny-pool` (a stem of conv + max-pool
#      blocks, models/stem.py), 3,000 steps on a 40,960-sample pool of `world@3d:pretraining` at 64 px.
#   2. four continuations of 1,500 steps with `clip-regions` (the object term weighted 1, then 3).
#   3. 64 -> 96 px: position embeddings resized (unbag.shipping.resize_builtin), 1,500 steps more on
#      the pool rendered at 96 px with the object and noun terms weighted 3: the shipped built-in model.
#   4. SGI's object proposer at 96 px (python -m unbag.training.proposer --px 96 --steps 6000).
#   5. from that model, on `world@3d:finetuning` at 96 px: the FT, NegCLIP, CLIC and DeGLA overlays,
#      then TFRegions, TFLocal-LI, TFLocal and TFGlobal on each of the five models; each measured on
#      the 3D ctrl at 96 px.
# Then: python scripts/ship3d.py --replace-shipped --staged RUNS_DIR/staged/pool96 \
#         --earlier RUNS_DIR/staged/builtin-pool RUNS_DIR/staged/pool-objects ... (its --help).
# Usage: bash scripts/reship3d.sh [RUNS_DIR]
# Step 5's heads in two lanes of one thread each, once the overlays are staged (each lane skips
# what is done and trains only its models' heads):
#   MODELS="pretrained ft negclip" OMP_NUM_THREADS=1 bash scripts/reship3d.sh &
#   MODELS="degla clic" OMP_NUM_THREADS=1 bash scripts/reship3d.sh &
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-runs/reship3d}
S=$R/staged
U=.venv/bin/unbag
PY=.venv/bin/python
mkdir -p "$R" "$S"

pool_dir() {  # DIST: the folder of the pool of the 3D stream DIST at SIZE px (64): pool-DIST, pool-DIST-SIZE
  echo "$R/pool-$1$( [ "${SIZE:-64}" != 64 ] && echo "-$SIZE" )"
}
pool() {  # DIST N SEED: render a pool of the 3D stream at SIZE px (64) once
  local out; out=$(pool_dir "$1")
  [ -f "$out/meta.json" ] || $U world pool --data "world@3d:$1" --n "$2" --seed "$3" --procs 2 \
      --size "${SIZE:-64}" --out "$out" --quiet
}
stage() {  # RUN BASE: keep a finished run's model, log and config under $S/RUN
  mkdir -p "$S/$1"
  cp "$R/$1/log.jsonl" "$S/$1/log.jsonl"
  cp "$R/$1/config.json" "$S/$1/train_config.json"
  $PY -c "from unbag.shipping import save_builtin; save_builtin('$R/$1', '$2', 0, '$S/$1')"
}
resume() {  # RUN: --resume when the run has a checkpoint
  [ -f "$R/$1/ckpt/trainer.pt" ] && echo --resume || true
}
measure() {  # MODEL [PROTOCOL...]: global and unbag's SGI (or the protocols named) on the ctrl CTRL
  local m=$1 p f; shift
  local ps=("$@"); [ ${#ps[@]} -eq 0 ] && ps=(global sgi)
  for p in "${ps[@]}"; do
    f="$S/$m/ctrl3d-${p/:/-}.json"
    [ -f "$f" ] || { $U eval --model "$S/$m" --bench "ctrl:$CTRL" --protocol "$p" --out "$R/${m//\//-}-${f##*/}" \
                     --quiet && cp "$R/${m//\//-}-${f##*/}" "$f"; }
  done
}

# 1. pretraining (64 px)
CTRL=$R/ctrl3d
[ -f "$CTRL/meta.json" ] || $U world build --style 3d --seed 0 --per-category 100 --size 64 --procs 2 --out "$CTRL" --quiet
if [ -z "${MODELS:-}" ] && [ ! -f "$S/builtin-pool/weights.safetensors" ]; then
  pool pretraining 40960 0
  [ -f "$R/builtin-pool/model/open_clip_config.json" ] || $U train --method clip-dense \
      --model open_clip:unbag-tiny-pool@random --data "pool:$(pool_dir pretraining)" --steps 3000 --batch-size 128 \
      --lr 1e-3 --warmup 100 --seed 0 --vocabulary 3d --out "$R/builtin-pool" --quiet $(resume builtin-pool)
  stage builtin-pool open_clip:unbag-tiny-pool@random
fi

# 2-3. continuations: RUN BASE SEED OPTION...
more() {
  local run=$1 base=$2 seed=$3; shift 3
  if [ ! -f "$S/$run/weights.safetensors" ]; then
    pool pretraining 40960 0
    [ -f "$R/$run/model/open_clip_config.json" ] || $U train --method clip-regions --model "$S/$base" \
        --data "pool:$(pool_dir pretraining)" --steps 1500 --batch-size 128 --lr 3e-4 --warmup 20 --seed "$seed" \
        --vocabulary 3d "$@" --out "$R/$run" --quiet $(resume "$run")
    stage "$run" "$S/$base"
  fi
  measure "$run"
}
if [ -z "${MODELS:-}" ]; then
  more pool-objects builtin-pool 6
  more pool-objects3 pool-objects 12 --object-weight 3
  more pool-objects4 pool-objects3 13 --object-weight 3
  more pool-objects5 pool-objects4 14 --object-weight 3
  [ -f "$S/pool96/weights.safetensors" ] || [ -f "$S/pool96-init/weights.safetensors" ] || $PY -c \
      "from unbag.shipping import resize_builtin; resize_builtin('$S/pool-objects5', 96, '$S/pool96-init')"
fi
CTRL=$R/ctrl3d-96
[ -f "$CTRL/meta.json" ] || $U world build --style 3d --seed 0 --per-category 100 --size 96 --procs 2 --out "$CTRL" --quiet
[ -n "${MODELS:-}" ] || SIZE=96 more pool96 pool96-init 18 --object-weight 3 --noun-weight 3

# 4. SGI's proposer at 96 px: the heads' region features and SGI's scores in step 5 come from it
if [ ! -f "$S/proposer96/proposer.json" ]; then
  $PY -m unbag.training.proposer --px 96 --steps 6000 --out "$S/proposer96"
fi
[ "$($PY -c 'import json; print(json.load(open("src/unbag/weights/proposer3d/proposer.json"))["data"]["px"])')" = 96 ] \
  || { echo "step 5 needs SGI's 96 px proposer in src/unbag/weights/proposer3d (ship $S/proposer96 first)" >&2; exit 1; }

# 5. everything trained from the built-in model B, at 96 px
B=pool96
train_head() {  # MODEL FEATURES HEADS_DIR KIND ARGS...: train the head on the model's features once
               # (extracted first, when a head still needs them), measure it on the ctrl CTRL
  local m=$1 f=$2 h=$3 k=$4; shift 4
  if [ ! -f "$h/$k/head.json" ]; then
    [ -f "$f/index.json" ] || $U features --model "$m" --data swaps@3d --seed 1000 --n 2000 --out "$f" --quiet
    $U train --method "$k" --model "$m" --data "$f" "$@" --out "$h/$k" --quiet
  fi
  [ -f "$h/$k-ctrl3d.json" ] || { $U eval --model "$m" --bench "ctrl:$CTRL" --protocol "head:$h/$k" \
      --out "$R/${h//\//-}-$k.json" --quiet && cp "$R/${h//\//-}-$k.json" "$h/$k-ctrl3d.json"; }
}
overlay() {  # METHOD ARGS...: an overlay of B trained on the fine-tuning pool at 96 px
  local m=$1; shift
  if [ ! -f "$S/$B/methods/$m/overlay.json" ]; then
    SIZE=96 pool finetuning 20480 0
    [ -f "$R/$B-$m/model/open_clip_config.json" ] || $U train --method "$m" --model "$S/$B" \
        --data "pool:$(SIZE=96 pool_dir finetuning)" --seed 2 --out "$R/$B-$m" --quiet "$@" $(resume "$B-$m")
    $PY - "$R/$B-$m" "$S/$B" "$S/$B/methods/$m" "$m" <<'PYEOF'
import json, shutil, sys
from unbag.shipping import save_overlay
from unbag.utils import versions
run, base, dest, method = sys.argv[1:]
meta = json.loads(open(f"{run}/model/open_clip_config.json").read())["unbag"]
out = save_overlay(f"{run}/model", base, dest, {"method": method, **meta, "versions": versions()})
shutil.copy(f"{run}/log.jsonl", out / "log.jsonl")
PYEOF
  fi
  measure "$B/methods/$m" global sgi
}
overlay ft --steps 600 --batch-size 128 --lr 1e-4 --warmup 50 --select ctrl-id@3d --ckpt-every 100
overlay negclip --steps 600 --batch-size 128 --lr 1e-4 --warmup 50
overlay clic --steps 600 --batch-size 128 --lr 1e-4
overlay degla --steps 300 --batch-size 96 --lr 1e-4 --warmup 25
# the field's baselines (2026-12-07): NegCLIP's budget; FSC-CLIP trains LoRA factors at 10x the rate,
# as its paper does; no heads are trained for them (the loop below)
overlay ce-clip --steps 600 --batch-size 128 --lr 1e-4 --warmup 50
overlay fsc-clip --steps 600 --batch-size 128 --lr 1e-3 --warmup 50
overlay tripletclip --steps 600 --batch-size 128 --lr 1e-4 --warmup 50
for m in ${MODELS:-pretrained ft negclip clic degla}; do
  spec="$S/$B"; [ "$m" != pretrained ] && spec="$S/$B/methods/$m"
  h="$S/$B/heads/$m"
  train_head "$spec" "$R/feat-$B-$m" "$h" tfregions --steps 1000 --lr 3e-4
  train_head "$spec" "$R/feat-$B-$m" "$h" tflocal-li --text phrases --steps 1000 --lr 1e-4 --calibrate
  train_head "$spec" "$R/feat-$B-$m" "$h" tflocal --text phrases --layers 2 --steps 1500
  train_head "$spec" "$R/feat-$B-$m" "$h" tfglobal --text phrases --steps 1000
done
