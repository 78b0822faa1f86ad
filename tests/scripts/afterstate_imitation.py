"""Imitation of the optimal policy with token and afterstate input (and afterstate with lookahead), on a
fixed handful of arithmetic problems.

Every input trains with `credit=solver`, `credit_options.policy=optimal`, `objective=hard` (cross-entropy to
the optimal actions at every visited state), the default network, 4 problems x 2 attempts per
iteration drawn from the same fixed set, and report greedy success on that set every 50 iterations.
Prints one JSON object (the curves, seconds, afterstate and total env steps per seed).

    python tests/scripts/afterstate_imitation.py [NUM_PROBLEMS] [ITERATIONS] [COUNT] [SEEDS] [INPUTS] [EVERY] [NETWORK]
    python tests/scripts/afterstate_imitation.py 8 300 3 2   # the run docs/training.md cites
    python tests/scripts/afterstate_imitation.py 4 60 3 1 afterstate,lookahead 20 tiny   # the lookahead check

INPUTS is a comma-separated subset of `tokens`, `afterstate`, `lookahead` (afterstate with
`afterstate_lookahead=1`; default the first two); EVERY the iterations between greedy evaluations
(default 50); NETWORK `default` or `tiny` (d_model 32, one block, MLP 64).
"""

import dataclasses
import json
import sys
import time

import jax
import jax.numpy as jnp

from jaxcredit.rollout import rollout
from jaxcredit.train import config_from_dict, make_train
from jaxcredit.train.evaluation import greedy
from jaxcredit.train.loop import Trainer

NUM_PROBLEMS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
ITERATIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
COUNT = int(sys.argv[3]) if len(sys.argv) > 3 else 3
SEEDS = tuple(range(int(sys.argv[4]) if len(sys.argv) > 4 else 2))
INPUTS = tuple(sys.argv[5].split(",")) if len(sys.argv) > 5 else ("tokens", "afterstate")
EVERY = int(sys.argv[6]) if len(sys.argv) > 6 else 50
NETWORK = {"tiny": {"d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64}, "default": {}}[
    sys.argv[7] if len(sys.argv) > 7 else "default"]
INPUT_FIELDS = {"tokens": {"policy_input": "tokens"}, "afterstate": {"policy_input": "afterstate"},
                "lookahead": {"policy_input": "afterstate", "afterstate_lookahead": 1}}
PROBLEM_SEED = 2026


@dataclasses.dataclass(frozen=True)
class FixedProblems(Trainer):
    """The trainer drawing its training problems uniformly from a fixed set."""

    problems: object = None

    def draw_problem(self, key):
        index = jax.random.randint(key, (), 0, NUM_PROBLEMS)
        return jax.tree_util.tree_map(lambda x: x[index], self.problems)


def greedy_success(trainer, params, problems) -> float:
    starts = jax.vmap(trainer.env.init_problem)(problems)
    trajectory, _ = rollout(trainer.env, greedy(trainer.policy_fn), params, starts, jax.random.key(0),
                            num_turns=trainer.env.max_turns)
    return float(jnp.mean(trajectory.episode_return > 0))


def main() -> None:
    results = {}
    for policy_input in INPUTS:
        config = config_from_dict({"env": "arithmetic", "env_overrides": {"count": COUNT}, "credit": "solver",
                                   "credit_options.policy": "optimal", "objective": "hard",
                                   **INPUT_FIELDS[policy_input], **NETWORK,
                                   "problems_per_iteration": 4, "attempts_per_problem": 2, "num_seeds": 1,
                                   "eval_problems": 16, "validation_problems": 16})
        base = make_train(config)
        problems = jax.vmap(base.env.sample_problem)(jax.random.split(jax.random.key(PROBLEM_SEED), NUM_PROBLEMS))
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Trainer)}
        trainer = FixedProblems(**fields, problems=problems)
        iterate = jax.jit(trainer.iterate)
        for seed in SEEDS:
            state = trainer.init(jnp.int32(seed))
            curve = [greedy_success(trainer, state.params, problems)]
            started = time.time()
            for i in range(ITERATIONS):
                state = iterate(state)
                if (i + 1) % EVERY == 0:
                    curve.append(greedy_success(trainer, state.params, problems))
                    print(policy_input, seed, i + 1, curve[-1], f"{time.time() - started:.0f}s", file=sys.stderr,
                          flush=True)
            results[f"{policy_input}/seed-{seed}"] = {
                f"greedy_success_every_{EVERY}": curve, "seconds": time.time() - started,
                "main_env_steps": int(state.ledger.main_env_steps),
                "afterstate_env_steps": int(state.ledger.afterstate_env_steps),
                "total_env_steps": int(state.ledger.total_env_steps)}
    print(json.dumps({"num_problems": NUM_PROBLEMS, "iterations": ITERATIONS, "count": COUNT, "every": EVERY,
                      "network": NETWORK or "default", "results": results}))


if __name__ == "__main__":
    main()
