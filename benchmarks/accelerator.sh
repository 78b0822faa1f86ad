#!/usr/bin/env bash
# Every `jaxcredit bench` suite at accelerator sizes, into one JSON file (docs/benchmarks.md,
# "jaxcredit bench accelerator"). Usage: benchmarks/accelerator.sh OUT.json [--quick] [--time-cap S]
# The command enforces its own time cap (default 450 s: stages past it are skipped and recorded, and
# a watchdog writes the file and exits with 124 at the cap); `timeout` here is a second, outer stop
# at 8 minutes in case the process cannot stop itself. The file is rewritten after every stage.
set -euo pipefail
if [[ $# -lt 1 || "$1" == -* ]]; then
    echo "usage: $0 OUT.json [--quick] [--time-cap SECONDS]" >&2
    exit 2
fi
out="$1"
shift
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >&2 || true
exec timeout --kill-after=10 480 jaxcredit bench accelerator --out "$out" "$@"
