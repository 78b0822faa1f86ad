"""The policy-input table of `jaxcredit bench train` alone: one iteration with tokens, afterstate and
afterstate + lookahead, timed interleaved with the bench's own trainers and timer (no matmul, no
scaling rows). Prints one JSON object: per cell its seconds per iteration, main and afterstate env
steps, and the first call's seconds (build and compile).

    python tests/scripts/bench_policy_inputs.py ENVS ARMS [--quick]
    python tests/scripts/bench_policy_inputs.py mad outcome,solver          # the MAD rows docs/training.md cites
    python tests/scripts/bench_policy_inputs.py arithmetic outcome,solver   # the arithmetic rows
"""

import json
import sys
import time

from jaxcredit.benchmarks.common import time_interleaved
from jaxcredit.benchmarks.train import INPUT_CREDITS, INPUT_ENVS, POLICY_INPUTS, _input_trainer, _iteration


def main() -> None:
    quick = "--quick" in sys.argv
    envs, arms = sys.argv[1].split(","), sys.argv[2].split(",")
    calls, spent, first_call = {}, {}, {}
    for env_name in envs:
        for credit in arms:
            for policy_input in POLICY_INPUTS:
                cell = f"{env_name}:{credit}:{policy_input}"
                started = time.time()
                trainer = _input_trainer(INPUT_ENVS[env_name], INPUT_CREDITS[credit], policy_input, quick)
                calls[cell], spent[cell], _ = _iteration(trainer)
                first_call[cell] = time.time() - started
                print(cell, f"{first_call[cell]:.0f}s", file=sys.stderr, flush=True)
    timing = time_interleaved(calls, repeats=3)
    print(json.dumps({cell: {"seconds_per_iteration": timing[cell][0], "main_env_steps": spent[cell].main_env_steps,
                             "afterstate_env_steps": spent[cell].afterstate_env_steps,
                             "first_call_seconds": first_call[cell]} for cell in calls}))


if __name__ == "__main__":
    main()
