#!/usr/bin/env bash
# Retrain and reship every shipped weight from scratch, as documented in
# src/unbag/weights/{builtin/TRAINING.md,methods/README.md,heads/README.md}:
#   1. the built-in model: `clip-dense` on the world's pretraining stream, then two runs of 1,200
#      steps on its siblings stream with shape swaps;
#   2. the FT / NegCLIP / CLIC / DeGLA overlays on the fine-tuning stream;
#   3. TFLocal, TFGlobal, TFRegions and TFLocal-LI heads for every shipped model.
# About 3 hours on 2 CPU cores, one step after another (2026-12-01: the built-in model's three runs
# in 37 + 45 + 36 min, then the rest in about 65 min as two lanes of one thread each, A: FT then
# heads for pretrained, FT, NegCLIP; B: NegCLIP, CLIC, DeGLA then their heads for CLIC and DeGLA).
# Resumable: finished steps are skipped.
# Usage: bash scripts/reship.sh [RUNS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-runs/reship}
U=.venv/bin/unbag
PY=.venv/bin/python
W=src/unbag/weights
mkdir -p "$R"

if [ ! -f "$R/builtin/model/open_clip_config.json" ]; then
  $U train --method clip-dense --model open_clip:unbag-tiny@random --data world:pretraining --steps 3000 \
      --batch-size 128 --lr 1e-3 --warmup 100 --seed 0 --out "$R/builtin" --quiet \
      $( [ -f "$R/builtin/ckpt/trainer.pt" ] && echo --resume )
fi
siblings() {  # N FROM SEED: continue on the siblings stream (the same model for every token the world uses)
  [ -f "$R/siblings$1/model/open_clip_config.json" ] || $U train --method clip-dense --model "$2" \
      --data world:pretraining-siblings --shape-swaps --steps 1200 --batch-size 128 --lr 3e-4 --warmup 20 \
      --seed "$3" --out "$R/siblings$1" --quiet $( [ -f "$R/siblings$1/ckpt/trainer.pt" ] && echo --resume )
}
siblings 1 "$R/builtin/model" 5
siblings 2 "$R/siblings1/model" 6
$PY -c "from unbag.shipping import save_builtin; save_builtin('$R/siblings2', 'open_clip:unbag-tiny@random', 0, '$W/builtin')"
cp "$R/builtin/log.jsonl" "$W/builtin/log.jsonl"
cp "$R/builtin/config.json" "$W/builtin/train_config.json"
for k in 1 2; do
  cp "$R/siblings$k/log.jsonl" "$W/builtin/log-siblings$k.jsonl"
  cp "$R/siblings$k/config.json" "$W/builtin/train_config-siblings$k.json"
done

overlay() {  # METHOD ARGS...: train from builtin, then ship the changed tensors with the run's record
  local m=$1; shift
  [ -f "$R/$m/model/open_clip_config.json" ] || $U train --method "$m" --model builtin --seed 2 --quiet \
      --out "$R/$m" "$@" $( [ -f "$R/$m/ckpt/trainer.pt" ] && echo --resume )
  $PY - "$R/$m" "$W/methods/$m" "$m" <<'PYEOF'
import json, shutil, sys
from unbag.shipping import save_overlay
from unbag.utils import versions
run, dest, method = sys.argv[1:]
meta = json.loads(open(f"{run}/model/open_clip_config.json").read())["unbag"]
out = save_overlay(f"{run}/model", "builtin", dest, {"method": method, **meta, "versions": versions()})
shutil.copy(f"{run}/log.jsonl", out / "log.jsonl")
PYEOF
}
overlay ft --steps 600 --batch-size 128 --lr 1e-4 --warmup 50 --select ctrl-id --ckpt-every 100
overlay negclip --steps 600 --batch-size 128 --lr 1e-4 --warmup 50
overlay clic --steps 600 --batch-size 128 --lr 1e-4
overlay degla --steps 300 --batch-size 96 --lr 1e-4 --warmup 25

for m in pretrained ft negclip clic degla; do
  spec=builtin; [ "$m" != pretrained ] && spec="builtin:$m"
  f="$R/feat-$m"
  [ -f "$f/index.json" ] || $U features --model "$spec" --data swaps --seed 1000 --n 10000 --out "$f" --quiet
  $U train --method tfregions --model "$spec" --data "$f" --steps 1000 --lr 3e-4 --out "$W/heads/tfregions/$m" --quiet
  $U train --method tflocal --model "$spec" --data "$f" --text phrases --layers 2 --steps 1500 --out "$W/heads/tflocal/$m" --quiet
  $U train --method tfglobal --model "$spec" --data "$f" --text phrases --steps 1000 --out "$W/heads/tfglobal/$m" --quiet
  $U train --method tflocal-li --model "$spec" --data "$f" --text phrases --steps 1000 --lr 1e-4 --calibrate --out "$W/heads/tflocal-li/$m" --quiet
done
echo "reshipped; now run: $U demo"
