#!/usr/bin/env bash
# Regenerates every record of docs/results/identification.md, from the repository root:
#   bash docs/results/identification/make.sh
# Trains the four policies it measures as "trained" (exact credit, one seed each, into
# runs/identification/; about 7 minutes on a 2-core CPU), then measures each record with
# `jaxcredit identify` (about 8 minutes). Every measure is exact: the same code gives the same
# measures (only each record's `seconds` changes).
set -euo pipefail
OUT=docs/results/identification
T=runs/identification
M='{"length": 5, "num_tokens": 4, "min_useful": 1, "max_useful": 2, "max_turns": 8}'
common=(--set num_seeds=1 --set learning_rate=0.003 --set eval_problems=64 --no-progress)
train() { name=$1; shift; [[ -f $T/$name/summary.json ]] || jaxcredit train --credit exact "${common[@]}" "$@" --out "$T/$name" --resume; }
train mad-small-exact --env mad --set "env_overrides=$M" --set budget=3000 --set num_evals=3
train arith3-exact-10k --env arithmetic --set 'env_overrides={"count": 3}' --set budget=10000 --set num_evals=4
train arith3-turns-exact-10k --env arithmetic --set 'env_overrides={"count": 3, "include_turns_left": true}' \
    --set budget=10000 --set num_evals=4
train routine-index-exact --env routine --set 'env_overrides={"cue": "index"}' --set budget=3000 --set num_evals=4
run() { name=$1; shift; jaxcredit identify "$@" --out "$OUT/$name.json" > /dev/null; echo "$name"; }
# MAD (small): every MAD observation hides the turns left; the prompt shows everything
run mad-small-turns_left-uniform   --env mad --env-config "$M" --hide turns_left --policy uniform
run mad-small-turns_left-untrained --env mad --env-config "$M" --hide turns_left --policy untrained
run mad-small-turns_left-trained   --hide turns_left --policy $T/mad-small-exact
run mad-small-text-uniform   --env mad --env-config "$M" --key text --policy uniform
run mad-small-text-trained   --key text --policy $T/mad-small-exact
# MAD (default)
run mad-turns_left-uniform   --env mad --hide turns_left --policy uniform
run mad-turns_left-untrained --env mad --hide turns_left --policy untrained
# arithmetic, three numbers: turns left hidden, against shown
run arithmetic3-turns_left-uniform   --env arithmetic --env-config '{"count": 3}' --hide turns_left --policy uniform
run arithmetic3-turns_left-untrained --env arithmetic --env-config '{"count": 3}' --hide turns_left --policy untrained
run arithmetic3-turns_left-trained   --hide turns_left --policy $T/arith3-exact-10k
run arithmetic3-turns_left-uniform-pool --env arithmetic --env-config '{"count": 3}' --hide turns_left \
    --policy uniform --scope pool
run arithmetic3-turns_left-trained-pool --hide turns_left --policy $T/arith3-exact-10k --scope pool
# arithmetic, three numbers, turns left shown: the UNDO target hidden
A='{"count": 3, "include_turns_left": true}'
run arithmetic3-undo_target-uniform   --env arithmetic --env-config "$A" --hide undo_target --policy uniform
run arithmetic3-undo_target-untrained --env arithmetic --env-config "$A" --hide undo_target --policy untrained
run arithmetic3-undo_target-trained   --hide undo_target --policy $T/arith3-turns-exact-10k
run arithmetic3-undo_target-uniform-pool --env arithmetic --env-config "$A" --hide undo_target --policy uniform \
    --scope pool
# arithmetic, three numbers: the text prompt
run arithmetic3-text-uniform --env arithmetic --env-config '{"count": 3}' --key text --policy uniform
run arithmetic3-text-trained --key text --policy $T/arith3-exact-10k
# arithmetic (default: four numbers), 16 problems
run arithmetic-turns_left-uniform --env arithmetic --hide turns_left --policy uniform --problems 16
run arithmetic-undo_target-uniform --env arithmetic --env-config '{"include_turns_left": true}' --hide undo_target \
    --policy uniform --problems 16
run arithmetic-text-uniform --env arithmetic --key text --policy uniform --problems 16
# routine: the cue, across problems and within each
run routine-cue-uniform-pool   --env routine --hide cue --policy uniform --scope pool
run routine-cue-untrained-pool --env routine --hide cue --policy untrained --scope pool
run routine-cue-trained-pool   --hide cue --policy $T/routine-index-exact --scope pool
run routine-cue-uniform   --env routine --hide cue --policy uniform
run routine-cue-trained   --hide cue --policy $T/routine-index-exact
