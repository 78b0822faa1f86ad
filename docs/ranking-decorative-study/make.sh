#!/usr/bin/env bash
# The ranking study at 10 checkpoints per policy. decorative-study's outcome and exact-on-policy
# cells are trained again at 10 seeds with their recorded configs (on another CPU than the sweep's, so seed by
# seed they train to other numbers than its 5).
# Then `jaxcredit rank` labels 128 episodes per checkpoint. Writes ranking.json, ranking.md and
# ranking.png beside this file, with verdict.txt (the reading) appended to ranking.md; the runs go to
# $OUT (default runs/ranking-decorative-10).
set -euo pipefail
cd "$(dirname "$0")/../.."
RECORD=docs/results/decorative-study/record/attempts
OUT=${OUT:-runs/ranking-decorative-10}
for arm in outcome exact-on-policy; do
  mapfile -t sets < <(python - "$RECORD/$arm/config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["num_seeds"] = 10
for key, value in config.items():
    if key not in ("env", "credit"):
        print(f"--set={key}={json.dumps(value, separators=(',', ':'))}")
PY
)
  credit=$(python -c "import json; print(json.load(open('$RECORD/$arm/config.json'))['credit'])")
  resume=(); [ -d "$OUT/$arm" ] && resume=(--resume)
  jaxcredit train --env mad --credit "$credit" --out "$OUT/$arm" "${resume[@]}" --no-progress "${sets[@]}" > /dev/null
done
jaxcredit rank --policy "outcome=$OUT/outcome" --policy "exact-on-policy=$OUT/exact-on-policy" \
  --episodes 128 --continuations 8 --seed 0 --no-progress --out docs/ranking-decorative-study
cat docs/ranking-decorative-study/verdict.txt >> docs/ranking-decorative-study/ranking.md  # the reading, kept apart
