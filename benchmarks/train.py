"""`jaxcredit bench train`: the training step against its FLOP lower bounds, and the policy's forward
and backward passes as fractions of this machine's dense matrix-multiply FLOP/s.

One interleaved run times: one jitted training iteration per arm (outcome, and mc with K = 4, on
default MAD), with and without its finiteness guards; the policy's forward and backward passes
(FLOPs from XLA's cost analysis); and a dense float32 matmul, the reference rate R. The FLOP lower
bounds count only the network evaluations the design must make; a bound in seconds is FLOPs / R.
Also: the policy inputs, packed against dense afterstates, and 16 to 1,024 episodes per iteration.
`--quick` runs tiny sizes. See docs/benchmarks.md#jaxcredit-bench-train.

Shape letters: B episodes per iteration, T turns, L observation length.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from unittest import mock

import jax
import jax.numpy as jnp

from jaxcredit.benchmarks.common import format_rate, machine_description, print_table, time_interleaved
from jaxcredit.rollout import rollout
from jaxcredit.train import config_from_dict, loop, make_train

ARMS = {"outcome": {"credit": "outcome"}, "mc": {"credit": "mc", "credit_options.continuations": 4}}
INPUT_ENVS = {"mad": {"env": "mad"}, "arithmetic": {"env": "arithmetic"}}
QUICK_INPUT_FIELDS = {  # --quick: each environment of the policy-input table at a tiny size
    "mad": {"env_overrides": {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5},
            "holdout_fraction": 0.0},
    "arithmetic": {"env_overrides": {"count": 3, "max_turns": 4}}}
INPUT_CREDITS = {"outcome": {"credit": "outcome"}, "solver": {"credit": "solver", "credit_options.policy": "optimal"}}
POLICY_INPUTS = {"tokens": {"policy_input": "tokens"}, "afterstate": {"policy_input": "afterstate"},
                 "lookahead": {"policy_input": "afterstate", "afterstate_lookahead": 1}}
SCALING_PROBLEMS = (4, 16, 64, 256)  # x 4 attempts: 16 .. 1,024 episodes per iteration
TARGET_FRACTION = 0.50
TARGET_BOUND_RATIO = 1.5


def _flops(compiled) -> float:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, list):  # older jax returns one dict per computation
        analysis = analysis[0]
    return float(analysis.get("flops", 0.0))


def _trainer(fields: dict, quick: bool):
    # quick: a tiny task and network, so a CI check of the JSON compiles in seconds (numbers are then context only)
    extra = {"problems_per_iteration": 2, "attempts_per_problem": 2, "d_model": 32, "num_layers": 1, "num_heads": 2,
             "mlp_dim": 64, "env_overrides": {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2,
                                              "max_turns": 5}, "holdout_fraction": 0.0} if quick else {}
    return make_train(config_from_dict({**fields, **extra, "num_seeds": 1, "eval_problems": 16}))


def _input_trainer(env_fields: dict, credit_fields: dict, policy_input: str, quick: bool):
    """The trainer of one (environment, arm, policy input) cell of the policy-input table."""
    extra = {"num_seeds": 1, "eval_problems": 16, **POLICY_INPUTS[policy_input]}
    if quick:
        extra.update(QUICK_INPUT_FIELDS[env_fields["env"]], problems_per_iteration=2, attempts_per_problem=2,
                     d_model=32, num_layers=1, num_heads=2, mlp_dim=64)
    return make_train(config_from_dict({**env_fields, **credit_fields, **extra}))


def unguarded():
    """A context in which `Trainer.iterate` traces with every finiteness check a constant True."""
    return mock.patch.object(loop, "all_finite", lambda tree: jnp.bool_(True))


def _iteration(trainer, *, guarded: bool = True):
    """`(call, ledger delta, state)`: the jitted iteration from a fixed state, and what one iteration
    spends. `guarded=False` traces it with every finiteness check a constant True (the guards' cost)."""
    iterate = jax.jit(trainer.iterate)
    state = trainer.init(jnp.int32(0))
    with contextlib.nullcontext() if guarded else unguarded():
        after = jax.block_until_ready(iterate(state))  # traced and compiled here
    spent = jax.tree_util.tree_map(lambda a, b: int(a) - int(b), after.ledger, state.ledger)
    return functools.partial(iterate, state), spent, state


def _passes(trainer, state):
    """`(forward, forward_backward, observations)`: zero-argument calls of the policy's forward pass
    and of the gradient of the outcome loss over one iteration's trajectory, their FLOPs, and the
    number of observations `B * T` they cover."""
    _, starts = trainer.sample_episodes(state)
    trajectory, _ = rollout(trainer.env, trainer.policy_fn, state.params, starts, jax.random.key(1),
                            num_turns=trainer.env.max_turns)
    advantage = jnp.ones(trajectory.live.shape, jnp.float32)
    forward = jax.jit(trainer.policy_fn)
    gradient = jax.jit(jax.grad(lambda p, t, a: trainer.loss(p, t, a, None)))
    args_f = (state.params, trajectory.observation, trajectory.legal_action_mask)
    args_g = (state.params, trajectory, advantage)
    flops_f = _flops(forward.lower(*args_f).compile())
    flops_g = _flops(gradient.lower(*args_g).compile())
    count = int(trajectory.live.size)
    return (lambda: forward(*args_f)), (lambda: gradient(*args_g)), flops_f, flops_g, count


def _packed_passes(quick: bool) -> tuple[dict, float]:
    """`(calls, legal fraction)`: zero-argument forward and gradient calls of the afterstate policy on
    one arithmetic iteration's trajectory, packed and dense (`packed`/`dense` x `forward`/`gradient`),
    and the fraction of the trajectory's `B * T * A` rows whose action is legal."""
    env = {"count": 3, "family": "default", "include_turns_left": True, **({"max_turns": 4} if quick else {})}
    trainer = _input_trainer({"env": "arithmetic", "env_overrides": env}, INPUT_CREDITS["outcome"], "afterstate",
                             quick)
    if quick:  # _input_trainer's tiny arithmetic, with the rung's clock shown
        trainer = make_train(dataclasses.replace(trainer.config, env_overrides=tuple(sorted(env.items()))))
    state = trainer.init(jnp.int32(0))
    _, starts = trainer.sample_episodes(state)
    trajectory, _ = rollout(trainer.env, trainer.policy_fn, state.params, starts, jax.random.key(1),
                            num_turns=trainer.env.max_turns)
    advantage = jnp.where(trajectory.live, 1.0, 0.0)
    calls = {}
    for name, packed in (("packed", True), ("dense", False)):
        policy_fn = dataclasses.replace(trainer.policy_fn, packed=packed)
        forward = jax.jit(policy_fn)
        gradient = jax.jit(jax.grad(lambda p, f=policy_fn: -jnp.sum(
            advantage * jnp.take_along_axis(jax.nn.log_softmax(f(p, trajectory.observation,
                                                                 trajectory.legal_action_mask)),
                                            trajectory.action[..., None], axis=-1)[..., 0])))
        calls[f"{name}:forward"] = functools.partial(forward, state.params, trajectory.observation,
                                                     trajectory.legal_action_mask)
        calls[f"{name}:gradient"] = functools.partial(gradient, state.params)
    return calls, float(trajectory.legal_action_mask.mean())


def _matmul(n: int):
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    matmul = jax.jit(jnp.matmul)
    return lambda: matmul(a, b)


def scaling(problem_counts, *, repeats: int) -> list[dict]:
    """Outcome-iteration seconds at each problems-per-iteration count (4 attempts each; 2 with quick sizes)."""
    rows = []
    for problems in problem_counts:
        trainer = make_train(config_from_dict({"credit": "outcome", "problems_per_iteration": problems,
                                               "num_seeds": 1, "eval_problems": 16}))
        call, spent, _ = _iteration(trainer)
        seconds = time_interleaved({"it": call}, repeats=repeats)["it"][0]
        episodes = problems * trainer.config.attempts_per_problem
        rows.append({"episodes": episodes, "seconds": seconds, "env_steps": spent.main_env_steps,
                     "seconds_per_episode": seconds / episodes})
    return rows


def run(args) -> dict:
    """Time each arm's iteration, the forward and forward+backward passes and a dense matmul, side by side."""
    quick = bool(getattr(args, "quick", False))
    repeats = 3 if quick else 5
    calls, spent, passes = {}, {}, None
    for arm, fields in ARMS.items():
        trainer = _trainer(fields, quick)
        calls[arm], spent[arm], state = _iteration(trainer)
        calls[f"{arm}:unguarded"], _, _ = _iteration(trainer, guarded=False)
        if passes is None:
            passes = _passes(trainer, state)
            ppo_epochs = trainer.config.ppo_epochs
    input_cells = [(env_name, credit, policy_input) for env_name in (tuple(INPUT_ENVS)[:1] if quick else INPUT_ENVS)
                   for credit in (("outcome",) if quick else INPUT_CREDITS) for policy_input in POLICY_INPUTS]
    for cell in input_cells:
        env_name, credit, policy_input = cell
        trainer = _input_trainer(INPUT_ENVS[env_name], INPUT_CREDITS[credit], policy_input, quick)
        calls[":".join(cell)], spent[":".join(cell)], _ = _iteration(trainer)
    packed_calls, legal_fraction = _packed_passes(quick)
    forward, gradient, flops_f, flops_g, count = passes
    n = 512 if quick else 1024
    timing = time_interleaved({**calls, **packed_calls, "forward": forward, "forward_backward": gradient,
                               "matmul": _matmul(n)}, repeats=repeats)
    seconds = {name: timing[name][0] for name in timing}
    matmul_rate = 2 * n**3 / seconds["matmul"]
    per_f, per_g = flops_f / count, flops_g / count
    fraction = {"forward": flops_f / seconds["forward"] / matmul_rate,
                "forward_backward": flops_g / seconds["forward_backward"] / matmul_rate}
    bound_flops = {
        "outcome": spent["outcome"].main_policy_evals * per_f + spent["outcome"].main_policy_evals * per_g * ppo_epochs,
        "mc": spent["mc"].label_policy_evals * per_f,
    }
    bound_seconds = {arm: bound_flops[arm] / matmul_rate for arm in ARMS}
    over_bound = {arm: seconds[arm] / bound_seconds[arm] for arm in ARMS}
    env_steps = {arm: spent[arm].main_env_steps + spent[arm].label_env_steps + spent[arm].critic_env_steps
                 for arm in ARMS}
    steps_per_second = {arm: env_steps[arm] / seconds[arm] for arm in ARMS}
    if quick:  # the tiny outcome iteration already timed: the keys without another compile
        episodes = spent["outcome"].main_episodes
        scale = [{"episodes": episodes, "seconds": seconds["outcome"], "env_steps": spent["outcome"].main_env_steps,
                  "seconds_per_episode": seconds["outcome"] / episodes}]
    else:
        scale = scaling(SCALING_PROBLEMS, repeats=3)

    size = "tiny (quick)" if quick else "default MAD, 64 episodes/iteration, ~100k-parameter policy"
    print_table(f"training step ({size}); bound = FLOPs the design must compute / matmul FLOP/s",
                ["arm", "time/iteration", "env steps/s", "bound FLOPs", "bound time", "time/bound",
                 f"target <= {TARGET_BOUND_RATIO}"],
                [[arm, f"{seconds[arm] * 1e3:.1f} ms", format_rate(steps_per_second[arm]),
                  format_rate(bound_flops[arm]), f"{bound_seconds[arm] * 1e3:.1f} ms", f"{over_bound[arm]:.2f}x",
                  "met" if over_bound[arm] <= TARGET_BOUND_RATIO else "missed"] for arm in ARMS])
    print_table("policy passes vs dense matmul", ["what", "FLOPs/observation", "FLOP/s", "fraction",
                                                  f"target >= {TARGET_FRACTION}"],
                [[f"forward [{count} observations]", format_rate(per_f), format_rate(flops_f / seconds["forward"]),
                  f"{fraction['forward']:.3f}", "met" if fraction["forward"] >= TARGET_FRACTION else "missed"],
                 [f"forward+backward [{count}]", format_rate(per_g),
                  format_rate(flops_g / seconds["forward_backward"]), f"{fraction['forward_backward']:.3f}",
                  "met" if fraction["forward_backward"] >= TARGET_FRACTION else "missed"],
                 [f"matmul {n}x{n} float32", "", format_rate(matmul_rate), "1", ""]])
    guard_ratios = {f"train:{arm}:guarded_vs_unguarded": seconds[arm] / seconds[f"{arm}:unguarded"] for arm in ARMS}
    print_table("guards: the iteration with its finiteness checks (credit, gradients, parameters) and without",
                ["arm", "guarded", "unguarded", "guarded/unguarded"],
                [[arm, f"{seconds[arm] * 1e3:.1f} ms", f"{seconds[f'{arm}:unguarded'] * 1e3:.1f} ms",
                  f"{guard_ratios[f'train:{arm}:guarded_vs_unguarded']:.3f}x"] for arm in ARMS])
    input_rows, input_ratios = [], {}
    for env_name, credit in dict.fromkeys((e, c) for e, c, _ in input_cells):
        tokens, afterstate, lookahead = (f"{env_name}:{credit}:{policy_input}" for policy_input in POLICY_INPUTS)
        input_ratios[f"train:{env_name}:{credit}:afterstate_vs_tokens"] = seconds[afterstate] / seconds[tokens]
        input_ratios[f"train:{env_name}:{credit}:lookahead_vs_tokens"] = seconds[lookahead] / seconds[tokens]
        cells = (tokens, afterstate, lookahead)
        input_rows.append([env_name, credit, *(f"{seconds[cell] * 1e3:.1f} ms" for cell in cells),
                           *(f"{seconds[cell] / seconds[tokens]:.2f}x" for cell in cells[1:]),
                           spent[tokens].main_env_steps, *(spent[cell].afterstate_env_steps for cell in cells[1:])])
    print_table("policy input: one iteration with tokens, afterstate and afterstate + lookahead",
                ["env", "arm", "tokens", "afterstate", "lookahead", "afterstate/tokens", "lookahead/tokens",
                 "main env steps", "afterstate env steps", "lookahead env steps"], input_rows)
    packed_ratios = {f"train:afterstate_dense_vs_packed:{what}": seconds[f"dense:{what}"] / seconds[f"packed:{what}"]
                     for what in ("forward", "gradient")}
    print_table(f"afterstate policy on arithmetic (3 numbers): legal afterstates only vs every row "
                f"({legal_fraction:.0%} of the rows legal)", ["pass", "packed", "dense", "dense/packed"],
                [[what, f"{seconds[f'packed:{what}'] * 1e3:.1f} ms", f"{seconds[f'dense:{what}'] * 1e3:.1f} ms",
                  f"{packed_ratios[f'train:afterstate_dense_vs_packed:{what}']:.2f}x"]
                 for what in ("forward", "gradient")])
    print_table("outcome iteration vs episodes per iteration", ["episodes", "time/iteration", "time/episode"],
                [[r["episodes"], f"{r['seconds'] * 1e3:.1f} ms", f"{r['seconds_per_episode'] * 1e3:.2f} ms"]
                 for r in scale])
    return {
        "suite": "train",
        "steps_per_second": {f"train:{arm}": steps_per_second[arm] for arm in ARMS},
        "seconds_per_iteration": {f"train:{arm}": seconds[arm] for arm in ARMS},
        "unguarded_seconds_per_iteration": {f"train:{arm}": seconds[f"{arm}:unguarded"] for arm in ARMS},
        "flops_per_second": {"forward": flops_f / seconds["forward"],
                             "forward_backward": flops_g / seconds["forward_backward"], f"matmul@{n}": matmul_rate},
        "forward_flops": flops_f,
        "forward_backward_flops": flops_g,
        "flops_per_observation": {"forward": per_f, "forward_backward": per_g},
        "bound_flops": {f"train:{arm}": bound_flops[arm] for arm in ARMS},
        "bound_seconds": {f"train:{arm}": bound_seconds[arm] for arm in ARMS},
        "scaling": {"episodes_per_iteration": scale},
        "policy_input": {":".join(cell): {"seconds_per_iteration": seconds[":".join(cell)],
                                          "main_env_steps": spent[":".join(cell)].main_env_steps,
                                          "afterstate_env_steps": spent[":".join(cell)].afterstate_env_steps}
                         for cell in input_cells},
        "afterstate_legal_fraction": legal_fraction,
        "ratios": {f"train:forward_vs_matmul@{n}": fraction["forward"],
                   f"train:forward_backward_vs_matmul@{n}": fraction["forward_backward"],
                   "train:outcome_vs_bound": over_bound["outcome"],
                   "train:mc_vs_bound": over_bound["mc"],
                   "train:outcome_vs_mc_steps_per_second": steps_per_second["outcome"] / steps_per_second["mc"],
                   **guard_ratios, **input_ratios, **packed_ratios},
        "machine": machine_description(),
    }
