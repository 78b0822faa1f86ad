"""One process of a 2-process `jaxcredit train --distributed` run on this machine, or its 1-process twin.

Usage: `python distributed_train.py PROCESS_ID PORT OUT [--stop-after-evals K] [--resume]` in two
processes (ids 0 and 1, 4 forced CPU devices each): both join the run through the command line's
`--distributed` options and train ONE tiny configuration whose episode batch is split over the 8
devices of both processes into run directory OUT. `python distributed_train.py single OUT` (8
forced CPU devices) runs the same configuration in one process with `shard_devices=8`.
`--stop-after-evals K` ends the run after K evaluations (to test a multi-process resume).
"""

import json
import sys

CREDIT = "mc"
TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
TINY = {"env_overrides": TINY_MAD, "d_model": 16, "num_layers": 1, "num_heads": 2, "mlp_dim": 32,
        "problems_per_iteration": 8, "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 16,
        "num_seeds": 2, "num_evals": 2, "budget": 256, "holdout_fraction": 0.0}


def train_args(out: str, *extra: str) -> list[str]:
    """The `jaxcredit train` arguments of the tiny run (Monte Carlo credit: sharded continuations too)."""
    sets = [f"--set={k}={json.dumps(v)}" for k, v in TINY.items()]
    return ["train", "--env", "mad", "--credit", CREDIT, "--out", out, "--no-progress", "--json",
            "--set=credit_options.continuations=2", *sets, *extra]


def main(argv: list[str]) -> int:
    from jaxcredit.cli import main as cli_main

    if argv[0] == "single":
        return cli_main(train_args(argv[1], "--set=shard_devices=8"))
    process_id, port, out, rest = int(argv[0]), int(argv[1]), argv[2], argv[3:]
    distributed = ["--distributed", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                   "--process-id", str(process_id)]
    if "--stop-after-evals" not in rest:
        return cli_main(train_args(out, *distributed, *rest))
    # An interrupted run: the same configuration, joined through the library and stopped after K evaluations.
    from jaxcredit.sharding import initialize_distributed
    from jaxcredit.train import config_from_dict, run_training

    stop = int(rest[rest.index("--stop-after-evals") + 1])
    info = initialize_distributed(f"127.0.0.1:{port}", 2, process_id)
    values = {"env": "mad", "credit": CREDIT, "credit_options.continuations": 2, **TINY,
              "shard_devices": info["global_devices"]}
    run_training(config_from_dict(values), out, resume="--resume" in rest, progress=False, stop_after_evals=stop)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
