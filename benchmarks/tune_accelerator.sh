#!/usr/bin/env bash
# `jaxcredit bench tune` at accelerator sizes: a tuning rung's points x seeds as separate runs and as
# one population, on the default MAD (docs/training.md, "Population programs"). A 64-episode
# iteration leaves a GPU mostly idle; a population fills it. Usage:
#   benchmarks/tune_accelerator.sh OUT.json [--time-cap S]
# Populations of 12, 48 and 192 members (6, 24 and 96 points x 2 seeds); the separate side trains
# at most 8 points and is scaled to all of them. Sizes past the time cap (default 420 s) are skipped
# and recorded; the file is rewritten after every size; `timeout` is an outer stop at 8 minutes.
set -euo pipefail
if [[ $# -lt 1 || "$1" == -* ]]; then
    echo "usage: $0 OUT.json [--time-cap SECONDS]" >&2
    exit 2
fi
out="$1"
shift
cap=420
if [[ $# -ge 2 && "$1" == "--time-cap" ]]; then
    cap="$2"
    shift 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >&2 || true
exec timeout --kill-after=10 480 jaxcredit bench tune --sizes 12,48,192 --out "$out" --time-cap "$cap" "$@"
