"""Make the committed run-directory fixture `tests/data/tiny-sweep` (run once; not part of the suite).

A tiny sweep (MAD with 4 cells, outcome vs mc, 2 seeds, the three regimes) and one small audit of
a trained policy, copied without checkpoints, policies or locks: the results page test
(`tests/test_results_page.py`) regenerates `tests/data/tiny-sweep-page/tiny-sweep.md` from it.

    python tests/scripts/make_tiny_sweep.py tests/data/tiny-sweep
    cd tests/data && jaxcredit report tiny-sweep --page tiny-sweep-page/tiny-sweep.md
"""

import os
import shutil
import sys
import tempfile

from jaxcredit.cli import main
from jaxcredit.train import SweepSpec, run_sweep

SPEC = SweepSpec(
    name="tiny-sweep",
    description="fixture: MAD with 4 cells, outcome vs mc (K=2), three regimes, 2 seeds",
    base={"env": "mad", "env_overrides": {"length": 4, "num_tokens": 3, "min_useful": 1, "max_useful": 2,
                                          "max_turns": 6},
          "learning_rate": 3e-3, "num_seeds": 2, "num_evals": 3, "eval_problems": 32,
          "problems_per_iteration": 8, "attempts_per_problem": 4},
    arms={"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "credit_options.continuations": 2}},
    budgets={"attempts": 320, "fixed-steps": 4_000},
)
SKIP = {"checkpoints", "policies", ".jaxcredit.lock", "plots", "report.md", "card.md", "card.json"}


def main_script(out: str) -> None:
    work = tempfile.mkdtemp(prefix="tiny-sweep-")
    sweep = os.path.join(work, "tiny-sweep")
    run_sweep(SPEC, sweep, progress=False)
    main(["audit", "--checkpoint", os.path.join(sweep, "attempts", "mc"), "--states", "8", "--continuations", "4",
          "--out", os.path.join(sweep, "audits", "attempts-mc"), "--no-progress"])
    if os.path.exists(out):
        shutil.rmtree(out)
    shutil.copytree(sweep, out, ignore=lambda _, names: [n for n in names if n in SKIP])
    shutil.rmtree(work)


if __name__ == "__main__":
    main_script(sys.argv[1])
