"""Before a full suite run: every arm, one iteration (and one evaluation) on the largest setting of
each full-suite learning experiment, then its labels on the largest setting of each label
experiment under both policies, one seed each. It checks that every (experiment, arm) starts and
runs, not what it scores. Prints one line per check and exits 1 if any failed (tracebacks on stderr).

    python tests/scripts/suite_smoke.py                      # the built-in arms
    python tests/scripts/suite_smoke.py --plugin my_arm.py --arms outcome,my-arm

On the 2-core CPU it takes about 20 minutes for the eight built-in arms (10-75 s a learning check,
about a minute a label check), against about a day for the full suite.
"""

import argparse
import sys
import time
import traceback

import jax

from jaxcredit.plugins import load_plugins
from jaxcredit.suite.experiments import BUILTIN_ARMS, SUITES, suite_arms
from jaxcredit.suite.labels import FIT_STEPS, LabelSetting, make_labeller
from jaxcredit.suite.learning import setting_spec
from jaxcredit.suite.run import check_arms
from jaxcredit.train.loop import make_train


def _learning(experiment, arms: dict):
    spec = setting_spec(experiment, experiment.settings[-1], arms)
    for arm in arms:
        def check(arm=arm):
            config = spec.arm_config(arm, num_seeds=1, budget=1, budget_counter="main_episodes", num_evals=1)
            trainer = make_train(config)
            state = jax.jit(trainer.init)(0)
            state = jax.jit(trainer.run_until)(state, *trainer.limits(config.episodes_per_iteration))
            jax.block_until_ready(jax.jit(trainer.evaluate)(state.params))
            return f"iteration {int(state.iteration)}"
        yield f"{experiment.name} {arm}", check


def _labels(experiment, arms: dict):
    config = {**experiment.config, "env_overrides": dict(experiment.settings[-1])}
    for policy in experiment.policies:
        def check(policy=policy):
            setting = LabelSetting(config, policy=policy, train_episodes=experiment.budgets["train_episodes"],
                                   fit_steps=experiment.budgets.get("fit_steps", FIT_STEPS))
            out = make_labeller(setting, arms)(0)
            return "scores " + ", ".join(f"{a} {out['arms'][a]['score']:.3f}" for a in arms)
        yield f"{experiment.name} {policy} policy", check


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin", action="append", default=[], help="a plugin file or module (repeatable)")
    parser.add_argument("--arms", help="comma-separated arm names (default: the built-in arms)")
    args = parser.parse_args(argv)
    load_plugins(args.plugin)  # their arms can be named in --arms
    arms = suite_arms([a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else BUILTIN_ARMS)
    try:
        check_arms(arms)
    except ValueError as error:
        print(f"suite_smoke: {error}", file=sys.stderr)
        return 2
    failed = []
    for experiment in SUITES["full"]:
        checks = _learning(experiment, arms) if experiment.kind == "learning" else _labels(experiment, arms)
        for label, check in checks:
            start = time.time()
            try:
                result = check()
                print(f"ok   {label} ({time.time() - start:.0f} s): {result}", flush=True)
            except Exception as error:  # noqa: BLE001 - report every failure, then go on
                failed.append(label)
                print(f"FAIL {label}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                      flush=True)
                traceback.print_exc(file=sys.stderr)
    print(f"{len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
