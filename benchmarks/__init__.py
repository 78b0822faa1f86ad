"""`jaxcredit bench` suites: each measures ours against its baselines side by side in one run.

`SUITES` maps a suite name to a function `run(args) -> dict` that prints a human table to
stderr and returns the JSON object (raw rates, `"ratios"`, and a `"machine"` description).
"""

from jaxcredit.benchmarks import adapter, branch, envs
from jaxcredit.benchmarks import solver as solver_bench
from jaxcredit.benchmarks import train as train_bench
from jaxcredit.benchmarks.arithmetic_numpy import ArithmeticNumpy, ArithmeticNumpyState
from jaxcredit.benchmarks.envs import ENV_BENCHES, EnvBench
from jaxcredit.benchmarks.mad_numpy import MadNumpy, MadNumpyState

SUITES: dict = {"envs": envs.run, "solver": solver_bench.run, "branch": branch.run, "train": train_bench.run,
          "adapter": adapter.run}

__all__ = ["ENV_BENCHES", "SUITES", "ArithmeticNumpy", "ArithmeticNumpyState", "EnvBench", "MadNumpy",
           "MadNumpyState"]
