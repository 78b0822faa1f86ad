"""Run in a fresh process with 8 forced host devices: sharded vs one-device results, as JSON.

Usage: `XLA_FLAGS=--xla_force_host_platform_device_count=8 python sharded_equality.py`.
Prints one JSON object: the largest differences between the sharded and the one-device runs of
`branch_returns` and of a short training run (Monte Carlo credit: sharded rollouts and
continuations), and how the sharded arrays were laid out.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np

from jaxcredit import PolicyConfig, branch_returns, make_policy
from jaxcredit.envs import make
from jaxcredit.ledger import MAX_COUNT, ledger_to_dict
from jaxcredit.sharding import batch_sharding, constrain_batch
from jaxcredit.train import config_from_dict
from jaxcredit.train.driver import compiled_programs

TINY = {"env": "mad", "env_overrides": {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2,
                                        "max_turns": 5},
        "d_model": 32, "num_layers": 1, "num_heads": 2, "mlp_dim": 64, "problems_per_iteration": 8,
        "attempts_per_problem": 4, "learning_rate": 3e-3, "eval_problems": 32, "num_seeds": 1, "num_evals": 1,
        "holdout_fraction": 0.0}


def main():
    report = {"devices": jax.device_count()}
    env = make("mad", length=4, num_tokens=3, max_turns=6)
    init_fn, policy_fn, _ = make_policy(PolicyConfig(d_model=32, num_layers=1, num_heads=2, mlp_dim=64), env)
    params = init_fn(jax.random.key(0))
    params["params"]["action_head"]["kernel"] = 0.5 * jax.random.normal(
        jax.random.key(1), params["params"]["action_head"]["kernel"].shape)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(2), 24))
    kwargs = dict(num_continuations=16, chunk_size=128)
    one = branch_returns(env, policy_fn, params, states, jax.random.key(3), **kwargs)
    sharding = batch_sharding(8)
    many = branch_returns(env, policy_fn, params, states, jax.random.key(3), sharding=sharding, **kwargs)
    forced = dict(force_first_actions=True, max_legal_actions=5, **kwargs)
    one_q = branch_returns(env, policy_fn, params, states, jax.random.key(4), **forced)
    many_q = branch_returns(env, policy_fn, params, states, jax.random.key(4), sharding=sharding, **forced)
    report["branch_max_diff"] = float(max(np.abs(one.returns - many.returns).max(),
                                          np.abs(one_q.returns - many_q.returns).max()))
    report["branch_counts_equal"] = bool(int(one.counts.env_steps) == int(many.counts.env_steps)
                                         and int(one_q.counts.env_steps) == int(many_q.counts.env_steps))
    report["branch_mean_return"] = float(one.mean.mean())
    laid_out = jax.jit(lambda x: constrain_batch(x * 2, sharding))(jnp.arange(16.0))
    report["constrained_spec"] = str(laid_out.sharding.spec)
    report["constrained_devices"] = len(laid_out.sharding.device_set)

    # Training: the driver's jitted programs (seeds vmapped), 3 iterations of Monte Carlo credit.
    finals = {}
    for devices in (1, 8):
        config = config_from_dict({**TINY, "credit": "mc", "credit_options.continuations": 2, "shard_devices": devices})
        init, segment, _ = compiled_programs(config)
        no_limit = jnp.full(2, MAX_COUNT, jnp.int32)
        state = segment(init(jnp.arange(2, dtype=jnp.int32)), jnp.full(2, 96, jnp.int32), no_limit,
                        no_limit)  # one limit per seed: main attempts, total env steps, total policy evals
        finals[devices] = jax.device_get(state)
    leaves = zip(jax.tree_util.tree_leaves(finals[1]), jax.tree_util.tree_leaves(finals[8]))
    report["train_max_diff"] = float(max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max()
                                         for a, b in leaves))
    report["train_ledger"] = ledger_to_dict(jax.tree_util.tree_map(lambda x: x[0], finals[8].ledger))
    report["train_ledgers_equal"] = bool(all(np.array_equal(a, b) for a, b in zip(
        jax.tree_util.tree_leaves(finals[1].ledger), jax.tree_util.tree_leaves(finals[8].ledger))))
    initial = jax.device_get(init(jnp.arange(2, dtype=jnp.int32)).params)
    report["train_param_change"] = float(max(np.abs(a - b).max() for a, b in zip(
        jax.tree_util.tree_leaves(finals[1].params), jax.tree_util.tree_leaves(initial))))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
