"""`jaxcredit bench` suites: each measures ours against its baselines side by side in one run.

`SUITES` maps a suite name to a function `run(args) -> dict` that prints a human table to
stderr and returns the JSON object (raw rates, `"ratios"`, and a `"machine"` description).
"""

from jaxcredit.benchmarks import solver as solver_bench

SUITES: dict = {"solver": solver_bench.run}

__all__ = ["SUITES"]
