"""`jaxcredit bench` suites: each measures ours against its baselines side by side in one run.

`SUITES` maps a suite name to a function `run(args) -> dict` that prints a human table to
stderr and returns the JSON object (raw rates, `"ratios"`, and a `"machine"` description).
`all` runs every other suite in turn and returns `{"suite": "all", "suites": {name: object},
"ratios": every suite's ratios in one dict (their keys are prefixed by suite already),
"machine"}`. `benchmarks.scaling.save_plots` draws the scaling curves of any of these objects.
`accelerator` (`benchmarks/accelerator.py`) is not part of `all`: it runs every suite at accelerator
sizes under a time cap and writes its own JSON file (`--out`).
"""

from jaxcredit.benchmarks import accelerator, adapter, branch, envs
from jaxcredit.benchmarks import solver as solver_bench
from jaxcredit.benchmarks import train as train_bench
from jaxcredit.benchmarks import tune as tune_bench
from jaxcredit.benchmarks.accelerator import run_accelerator
from jaxcredit.benchmarks.arithmetic_numpy import ArithmeticNumpy, ArithmeticNumpyState
from jaxcredit.benchmarks.common import machine_description
from jaxcredit.benchmarks.envs import ENV_BENCHES, EnvBench
from jaxcredit.benchmarks.mad_numpy import MadNumpy, MadNumpyState
from jaxcredit.benchmarks.scaling import save_plots


def run_all(args) -> dict:
    """Every suite in `SUITES` (but `all` and `accelerator`) with the same arguments, in one JSON object."""
    suites, ratios = {}, {}
    for name, run in SUITES.items():
        if name in NOT_IN_ALL:
            continue
        suites[name] = run(args)
        ratios.update(suites[name].get("ratios", {}))
    return {"suite": "all", "suites": suites, "ratios": ratios, "machine": machine_description()}


SUITES: dict = {"envs": envs.run, "solver": solver_bench.run, "branch": branch.run, "train": train_bench.run,
                "adapter": adapter.run, "tune": tune_bench.run, "all": run_all, "accelerator": accelerator.run}
NOT_IN_ALL = ("all", "accelerator")

__all__ = ["ENV_BENCHES", "NOT_IN_ALL", "SUITES", "ArithmeticNumpy", "ArithmeticNumpyState", "EnvBench", "MadNumpy",
           "MadNumpyState", "run_accelerator", "run_all", "save_plots"]
