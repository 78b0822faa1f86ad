"""One process of a 2-process `jax.distributed` run on this machine (4 CPU devices each).

Usage: `python distributed_branches.py PROCESS_ID PORT` in two processes (ids 0 and 1). Both join
the run through `jaxcredit.sharding.initialize_distributed`, then run ONE `branch_returns` call
whose continuations are split over the 8 devices of both processes. Process 0 prints one JSON
object: the run's layout and the gathered returns `[N, K]`.
"""

import json
import sys

from jaxcredit.sharding import batch_sharding, initialize_distributed

PROBLEM = {"num_states": 12, "num_continuations": 8, "chunk_size": 32}


def branch_inputs():
    """The same small policy, states and key in every process (and in the test's own check)."""
    import jax

    from jaxcredit import PolicyConfig, make_policy
    from jaxcredit.envs import make

    env = make("mad", length=4, num_tokens=3, max_turns=6)
    init_fn, policy_fn, _ = make_policy(PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32), env)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(1), head["kernel"].shape)
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(2), PROBLEM["num_states"]))
    return env, policy_fn, params, states, jax.random.key(3)


def main(process_id: int, port: int):
    info = initialize_distributed(f"127.0.0.1:{port}", 2, process_id, local_device_count=4)
    from jax.experimental import multihost_utils

    from jaxcredit import branch_returns

    env, policy_fn, params, states, key = branch_inputs()
    result = branch_returns(env, policy_fn, params, states, key, num_continuations=PROBLEM["num_continuations"],
                            chunk_size=PROBLEM["chunk_size"], sharding=batch_sharding())
    returns = multihost_utils.process_allgather(result.returns, tiled=True)
    steps = int(multihost_utils.process_allgather(result.counts.env_steps, tiled=True))
    if process_id == 0:
        print(json.dumps({**info, "returns": returns.tolist(), "env_steps": steps}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
