"""Credit estimators: one advantage per action of a batch of episodes, each a small pure function.

Every estimator takes a `Trajectory` (`[B, T]`, see `jaxcredit.rollout`) and, as keywords, the
values it needs, and returns float32 `[B, T]` advantages: zero on non-live steps, never NaN. The
credit arms (`jaxcredit.arms`) compute those values and charge their cost. The estimators:
`outcome` (GRPO, RLOO or a mean baseline), `mc` (VinePPO), `exact` (the current policy's
`Q^π - V^π`), `solver` (`Q^μ - V^μ` under a fixed reference or optimal policy), `anchor`
(GiGPO) and `progress` (Math-Shepherd). Counterfactual credit depends on the replacement
distribution ρ (`REPLACEMENTS`: `on-policy`, `uniform`, `null`; `replacement_value`).
Episodes of one problem are contiguous, `B = P * group_size`; solver values are `v [P, T+1, S]`,
`q [P, T+1, S, A]`, indexed by turns LEFT and position. Formulas and references: see
docs/training.md#credit-estimators-jaxcreditcreditpy.

Shape letters: B episodes, T turns, A actions, S positions, P problems, K continuations.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxcredit.env import Environment
from jaxcredit.ledger import Counts
from jaxcredit.policy_fn import PolicyFn
from jaxcredit.rollout import Trajectory, branch_returns

BASELINES = ("grpo", "rloo", "mean")
REPLACEMENTS = ("on-policy", "uniform", "null")  # what replaces a_t in counterfactual credit
PROGRESS_KINDS = ("soft", "hard")  # Math-Shepherd's labels: the fraction of continuations that succeed, or any
ANCHOR_DISCOUNT = 0.95  # GiGPO's step-level discount (Feng et al. 2025)


def _on_live(trajectory: Trajectory, advantage: jax.Array) -> jax.Array:
    return jnp.where(trajectory.live, advantage, 0.0).astype(jnp.float32)


def _grouped(x: jax.Array, group_size: int) -> jax.Array:
    if group_size < 1 or x.shape[0] % group_size:
        raise ValueError(f"group_size must be >= 1 and divide the batch of {x.shape[0]} episodes, got {group_size}")
    return x.reshape(x.shape[0] // group_size, group_size, *x.shape[1:])


def group_normalised(values: jax.Array, weights: jax.Array, *, epsilon: float) -> jax.Array:
    """`(x - mean) / (std + epsilon)` over the weighted members of each row; exactly 0 for uniform rows.

    `values`, `weights` float32 `[..., n]` (weights 0/1). A row whose weighted members are all
    equal (or that has fewer than two) gives 0 without dividing by a zero standard deviation.
    """
    count = jnp.maximum(weights.sum(-1, keepdims=True), 1.0)
    mean = (weights * values).sum(-1, keepdims=True) / count
    std = jnp.sqrt((weights * (values - mean) ** 2).sum(-1, keepdims=True) / count)
    high = jnp.where(weights > 0, values, -jnp.inf).max(-1, keepdims=True)
    low = jnp.where(weights > 0, values, jnp.inf).min(-1, keepdims=True)
    uniform = ~(high > low)  # also True for empty rows (-inf > inf is False)
    return jnp.where(uniform, 0.0, (values - mean) / (std + epsilon))


def outcome_advantage(
    trajectory: Trajectory, *, group_size: int, baseline: str = "grpo", epsilon: float = 1e-6
) -> jax.Array:
    """Outcome credit: every action of an episode gets its episode's advantage. float32 `[B, T]`.

    With `R_i` the return of episode i among the `G = group_size` episodes of its problem:
    - `grpo` (Shao et al. 2024, DeepSeekMath): `(R_i - mean(R)) / (std(R) + epsilon)`, std over
      the group (ddof 0); exactly 0 when the group's returns are all equal.
    - `rloo` (Ahmadian et al. 2024; Kool et al. 2019): `R_i - mean_{j != i} R_j`
      `= G / (G - 1) * (R_i - mean(R))`; needs `G >= 2`.
    - `mean`: `R_i - mean(R)`.
    """
    if baseline not in BASELINES:
        raise ValueError(f"unknown outcome baseline {baseline!r}; choices: {', '.join(BASELINES)}")
    if baseline == "rloo" and group_size < 2:
        raise ValueError(f"the rloo baseline needs group_size >= 2, got {group_size}")
    returns = _grouped(trajectory.episode_return, group_size)  # [P, G]
    if baseline == "grpo":
        advantage = group_normalised(returns, jnp.ones_like(returns), epsilon=epsilon)
    else:
        centred = returns - returns.mean(-1, keepdims=True)
        advantage = centred * (group_size / (group_size - 1)) if baseline == "rloo" else centred
    return _on_live(trajectory, advantage.reshape(-1)[:, None])


def gae_advantage(trajectory: Trajectory, *, state_values: jax.Array, lam: float, discount: float = 1.0) -> jax.Array:
    """Generalised advantage estimation (Schulman et al. 2016) from state values. float32 `[B, T]`.

    With `δ_t = r_t + discount V(s_{t+1}) - V(s_t)` on live steps (`V(s_{t+1}) = 0` once the
    episode has ended; `state_values` float32 `[B, T+1]` as for `mc_advantage`),
    `A_t = Σ_{k >= 0} (discount lam)^k δ_{t+k}` over the episode's live steps. `lam = 0` is the
    one-step `r_t + V(s_{t+1}) - V(s_t)`; `lam = 1` (undiscounted) is `G_t - V(s_t)`, the return
    to go against a learned baseline, unbiased however wrong `V` is.
    """
    delta = mc_advantage(trajectory, state_values=state_values)  # δ_t, 0 after the end
    decay = discount * lam

    def back(later, d):
        now = d + decay * later
        return now, now

    _, out = jax.lax.scan(back, jnp.zeros(delta.shape[0]), delta.T, reverse=True)
    return _on_live(trajectory, out.T)


def _taken(trajectory: Trajectory, num_actions: int) -> tuple[jax.Array, jax.Array]:
    """`(action, accepted)` `[B, T]`: the action clipped into `[0, A)` (safe to gather with) and
    whether the action taken was in range and legal; otherwise it was refused (used a turn,
    changed nothing), whatever value an array holds at the clipped index."""
    action = trajectory.action
    safe = jnp.clip(action, 0, num_actions - 1)
    legal = jnp.take_along_axis(trajectory.legal_action_mask, safe[..., None], axis=-1)[..., 0]
    return safe, legal & (action == safe)


def mc_advantage(
    trajectory: Trajectory, *, state_values: jax.Array, action_values: jax.Array | None = None,
    baseline: jax.Array | None = None,
) -> jax.Array:
    """Monte Carlo credit from branch continuations (Kazemnejad et al. 2024, VinePPO). `[B, T]`.

    `state_values` float32 `[B, T+1]`: `V̂(s_t)` for the state before each action and, last, the
    final state (the mean return of K continuations, `branch_state_values`); an ended state's
    value is taken as 0 whatever is passed. Without `action_values`:
    `A_t = r_t + V̂(s_{t+1}) - V̂(s_t)` (VinePPO), so the continuations from `s_{t+1}` serve as
    `Q̂(s_t, a_t)` samples. With `action_values` float32 `[B, T, A]` (forced first actions,
    `branch_action_values`): `A_t = Q̂(s_t, a_t) - V̂(s_t)`, where an illegal or out-of-range
    `a_t` (a refusal: one turn used, nothing else changed) has `Q̂ = r_t + V̂(s_{t+1})`, the value
    of the same position with one turn fewer (0 when that was the last turn). `baseline` float32
    `[B, T]`, when given, replaces `V̂(s_t)` as what is subtracted (`replacement_value`: the
    counterfactual baseline of another replacement distribution).
    """
    num_turns = trajectory.live.shape[1]
    if state_values.shape != trajectory.live.shape[:1] + (num_turns + 1,):
        raise ValueError(f"state_values must have shape [B, T+1] = {(trajectory.live.shape[0], num_turns + 1)}, "
                         f"got {state_values.shape}")
    value_now = jnp.where(trajectory.live, state_values[:, :-1] if baseline is None else baseline, 0.0)
    value_next = jnp.where(trajectory.done, 0.0, state_values[:, 1:])
    if action_values is None:
        return _on_live(trajectory, trajectory.reward + value_next - value_now)
    action, accepted = _taken(trajectory, action_values.shape[-1])
    chosen = jnp.take_along_axis(action_values, action[..., None], axis=-1)[..., 0]
    chosen = jnp.where(accepted, chosen, trajectory.reward + value_next)
    return _on_live(trajectory, chosen - value_now)


def highest_entropy_steps(trajectory: Trajectory, entropy: jax.Array, fraction: float) -> jax.Array:
    """bool `[B, T]`: in each episode, the `ceil(fraction * L)` live steps (L: its live steps) whose
    policy entropy (float32 `[B, T]`) is highest, the earlier step first among equals; none with
    `fraction` 0, every live step with 1 (selective branching's steps)."""
    live = trajectory.live
    count = jnp.ceil(fraction * jnp.sum(live, axis=1, dtype=jnp.float32) - 1e-6).astype(jnp.int32)  # [B]
    order = jnp.argsort(jnp.where(live, -entropy, jnp.inf), axis=1, stable=True)  # highest first, ended last
    rank = jnp.argsort(order, axis=1)
    return live & (rank < count[:, None])


def check_replacement(replacement: str, env: Environment | None = None) -> None:
    """Raise `ValueError` unless `replacement` is one of `REPLACEMENTS` that `env` can give: `null`
    needs an environment with a null action (`env.null_action`, e.g. MAD with decorative actions)."""
    if not isinstance(replacement, str) or replacement not in REPLACEMENTS:
        raise ValueError(f"unknown replacement {replacement!r}; choices: {', '.join(REPLACEMENTS)}")
    if replacement == "null" and env is not None and env.null_action is None:
        raise ValueError(f"replacement 'null' needs an environment with a null (decorative) action; "
                         f"{env.name!r} as configured has none (MAD: set decorative_actions >= 1)")


def replacement_value(trajectory: Trajectory, action_values: jax.Array, *, replacement: str,
                      on_policy_value: jax.Array, null_action: int | None = None) -> jax.Array:
    """float32 `[B, T]`: `E_{a' ~ ρ}[Q(s_t, a')]`, the baseline of counterfactual credit
    `Q(s_t, a_t) - E_{a' ~ ρ}[Q(s_t, a')]` under the replacement distribution ρ.

    `action_values` float32 `[B, T, A]` is `Q(s_t, ·)` (read on legal actions only);
    `on_policy_value` float32 `[B, T]` is `Σ_a π(a|s_t) Q(s_t, a)` for the policy π the values are
    of. `replacement`: `on-policy` (ρ = π: that value), `uniform` (ρ uniform over the legal
    actions of `s_t`: their mean value) or `null` (ρ the null action `null_action`, always legal:
    its value). 0 on steps that are not live.
    """
    check_replacement(replacement)
    if replacement == "on-policy":
        baseline = on_policy_value
    elif replacement == "uniform":
        legal = trajectory.legal_action_mask
        total = jnp.sum(jnp.where(legal, action_values, 0.0), axis=-1)
        baseline = total / jnp.maximum(jnp.sum(legal, axis=-1), 1)
    else:
        if null_action is None:
            raise ValueError("replacement 'null' needs the environment's null_action")
        baseline = action_values[..., null_action]
    return _on_live(trajectory, baseline)


def _per_episode(array: jax.Array, batch: int, group_size: int) -> jax.Array:
    if array.shape[0] * group_size != batch:
        raise ValueError(f"values for {array.shape[0]} problems x group_size {group_size} do not match "
                         f"{batch} episodes")
    return jnp.repeat(array, group_size, axis=0)


def solver_action_advantage(trajectory: Trajectory, values: Any, *, group_size: int = 1,
                            replacement: str = "on-policy", null_action: int | None = None) -> jax.Array:
    """float32 `[B, T]`: `Q[tl_t, p_t, a_t] - V[tl_t, p_t]` gathered from solver values.

    `values` has `v` `[P, T+1, S]` and `q` `[P, T+1, S, A]` (or one problem's `[T+1, S]`,
    `[T+1, S, A]`). A refused (illegal or out-of-range) action changes nothing but uses a turn,
    so its value is `V[tl_t - 1, p_t]` whatever `q` holds there (as `analysis.exact` values it).
    With another `replacement` than `on-policy`, `V` is replaced by `E_{a' ~ ρ}[Q[tl_t, p_t, a']]`
    (`replacement_value`: `uniform` over the legal actions, or the `null` action `null_action`).
    """
    batch = trajectory.live.shape[0]
    v, q = values.v, values.q
    if v.ndim == 2:
        v, q, group_size = v[None], q[None], batch
    v, q = _per_episode(v, batch, group_size), _per_episode(q, batch, group_size)
    rows = jnp.arange(batch)[:, None]
    turns_left = jnp.clip(trajectory.turns_left, 0, v.shape[1] - 1)
    position = trajectory.position
    action, legal = _taken(trajectory, q.shape[-1])
    value_now = v[rows, turns_left, position]
    if replacement != "on-policy":
        menu = jnp.where(jnp.isfinite(q[rows, turns_left, position]), q[rows, turns_left, position], 0.0)
        value_now = replacement_value(trajectory, menu, replacement=replacement, on_policy_value=value_now,
                                      null_action=null_action)
    refused_value = v[rows, jnp.maximum(turns_left - 1, 0), position]
    action_value = jnp.where(legal, q[rows, turns_left, position, action], refused_value)
    advantage = jnp.where(jnp.isfinite(action_value) & jnp.isfinite(value_now), action_value - value_now, 0.0)
    return _on_live(trajectory, advantage)


def solver_menu_values(trajectory: Trajectory, values: Any, *, group_size: int = 1) -> jax.Array:
    """float32 `[B, T, A]`: `Q[tl_t, p_t, a]` of EVERY action at each step's state (the legal-action
    menu the value-target objectives of `jaxcredit.objectives` train on); 0 on illegal actions and
    on steps that are not live. `values` as for `solver_action_advantage`."""
    batch = trajectory.live.shape[0]
    q = values.q if values.q.ndim == 4 else values.q[None]
    q = _per_episode(q, batch, batch if values.q.ndim == 3 else group_size)
    turns_left = jnp.clip(trajectory.turns_left, 0, q.shape[1] - 1)
    menu = q[jnp.arange(batch)[:, None], turns_left, trajectory.position]  # [B, T, A]
    keep = trajectory.live[..., None] & trajectory.legal_action_mask & jnp.isfinite(menu)
    return jnp.where(keep, menu, 0.0).astype(jnp.float32)


def exact_advantage(trajectory: Trajectory, *, values: Any, group_size: int = 1, replacement: str = "on-policy",
                    null_action: int | None = None) -> jax.Array:
    """Exact credit of the current policy π: `A_t = Q^π(s_t, a_t) - V^π(s_t)`. float32 `[B, T]`.

    `values` are the solver's `Values` of π itself (`solver_values.reference_values` with
    `policy="network"`), indexed by turns left; see `solver_action_advantage` (and its
    `replacement`: `V^π` is the `on-policy` baseline).
    """
    return solver_action_advantage(trajectory, values, group_size=group_size, replacement=replacement,
                                   null_action=null_action)


def solver_advantage(
    trajectory: Trajectory,
    *,
    values: Any,
    group_size: int = 1,
    weight: float = 1.0,
    outcome: str | None = None,
    epsilon: float = 1e-6,
    replacement: str = "on-policy",
    null_action: int | None = None,
) -> jax.Array:
    """Solver credit under a FIXED policy μ (CAST-style): float32 `[B, T]`.

    `A_t = weight * (Q^μ(s_t, a_t) - V^μ(s_t))`, with `values` from the solver under the uniform
    reference (`evaluate_policy(graph, uniform_policy(graph))`) or the optimal policy
    (`optimal_values`, then `Q* - V* <= 0`). With `outcome` set to a baseline name, the outcome
    advantage of that baseline is added: `A_t = A^outcome_i + weight * (Q^μ - V^μ)`. `replacement`
    (see `solver_action_advantage`) replaces `V^μ`, the `on-policy` baseline of μ's own values.
    """
    advantage = weight * solver_action_advantage(trajectory, values, group_size=group_size, replacement=replacement,
                                                 null_action=null_action)
    if outcome is not None:
        advantage = advantage + outcome_advantage(trajectory, group_size=group_size, baseline=outcome,
                                                  epsilon=epsilon)
    return advantage


def _returns_to_go(reward: jax.Array, discount: float) -> jax.Array:
    def back(later, r):
        now = r + discount * later
        return now, now

    _, out = jax.lax.scan(back, jnp.zeros(reward.shape[0]), reward.T, reverse=True)
    return out.T


def anchor_advantage(
    trajectory: Trajectory,
    *,
    group_size: int,
    step_weight: float = 1.0,
    discount: float = ANCHOR_DISCOUNT,
    epsilon: float = 1e-6,
) -> jax.Array:
    """Anchor-state credit (Feng et al. 2025, GiGPO). float32 `[B, T]`.

    Episode level: `A^E_i = grpo(R_i)` within the problem's group (as `outcome`). Step level:
    the live steps of a group's episodes are grouped by identical position (the anchor state);
    each step's discounted return-to-go `G_t = sum_{k >= t} discount^(k-t) r_k` is normalised
    within its anchor group, `A^S_t = (G_t - mean(G)) / (std(G) + epsilon)` (0 for an anchor
    group of one step or of equal returns). `A_t = A^E_i + step_weight * A^S_t`. The discount
    defaults to the paper's 0.95: with a single reward at the end it is what separates two
    visits of one position that reach success in different numbers of turns (with 1, a wasted
    turn earns no step-level penalty).
    """
    episode = outcome_advantage(trajectory, group_size=group_size, baseline="grpo", epsilon=epsilon)
    to_go = _grouped(_returns_to_go(trajectory.reward, discount), group_size)  # [P, G, T]
    num_problems = to_go.shape[0]
    to_go = to_go.reshape(num_problems, -1)  # [P, n], n = G * T
    position = _grouped(trajectory.position, group_size).reshape(num_problems, -1)
    live = _grouped(trajectory.live, group_size).reshape(num_problems, -1)
    same = (position[:, :, None] == position[:, None, :]) & live[:, :, None] & live[:, None, :]  # [P, n, n]
    members = jnp.broadcast_to(to_go[:, None, :], same.shape)
    step = group_normalised(members, same.astype(jnp.float32), epsilon=epsilon)  # row i: every member j
    own = jnp.diagonal(step, axis1=1, axis2=2).reshape(trajectory.live.shape)  # member i of its own row
    return _on_live(trajectory, episode + step_weight * own)


def text_matched_advantage(trajectory: Trajectory, memory: dict | None = None, *,
                           discount: float = 1.0) -> tuple[jax.Array, dict | None]:
    """Text-matched credit, as a pipeline that cannot restore an environment estimates it: each live
    step is matched by what the policy was shown (its observation tokens, `states.observation`)
    to every logged step that looked the same, in this batch and in `memory` (earlier batches).
    `A_t = Q̂(o_t, a_t) − V̂(o_t)`: the mean return-to-go (`discount`) of the matched steps that took
    the same action, minus that of all matched steps. float32 `[B, T]` (0 for a step matched only
    to itself).

    `memory`: `{"observation" int32 [M, L], "action" int32 [M], "to_go" float32 [M], "valid" bool
    [M]}`, the steps of the last `M / (B * T)` batches, or None (this batch alone). Returns
    `(advantage, memory)`, the memory with this batch's steps in place of its oldest batch.
    """
    batch, turns = trajectory.live.shape
    observation = trajectory.states.observation.reshape(batch * turns, -1)
    action = trajectory.action.reshape(-1)
    to_go = _returns_to_go(trajectory.reward, discount).reshape(-1)
    valid = trajectory.live.reshape(-1)
    pool = {"observation": observation, "action": action, "to_go": to_go, "valid": valid}
    if memory is not None:
        pool = jax.tree_util.tree_map(lambda old, new: jnp.concatenate([old, new]), memory, pool)
    same = jnp.all(observation[:, None, :] == pool["observation"][None, :, :], axis=-1) & pool["valid"][None, :]
    same_action = same & (action[:, None] == pool["action"][None, :])  # [n, n_pool], each step matches itself
    def mean(mask):
        return jnp.sum(mask * pool["to_go"][None, :], axis=1) / jnp.maximum(jnp.sum(mask, axis=1), 1)
    advantage = (mean(same_action) - mean(same)).reshape(batch, turns)
    if memory is not None:  # the oldest batch out, this one in
        memory = jax.tree_util.tree_map(lambda x: x[batch * turns:], pool)
    return _on_live(trajectory, advantage), memory


# ----- Monte Carlo values by branching (label work: record their counts in the "label" account) -----

def _flatten(tree, ndims: int = 2):
    return jax.tree_util.tree_map(lambda x: x.reshape(-1, *x.shape[ndims:]), tree)


def _episode_groups(batch: int, per_episode: int) -> jax.Array:
    """int32 `[batch * per_episode]`: the episode of each flattened state (`key_groups` of
    `branch_returns`: the continuations of one episode's states share their random numbers)."""
    return jnp.repeat(jnp.arange(batch, dtype=jnp.int32), per_episode)


def _branch_every_state(env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array,
                        *, num_continuations: int, chunk_size: int, sharding: Any, common_random_numbers: bool = False,
                        active: jax.Array | None = None):
    """`branch_returns` from every state of `trajectory` and its final states, flattened `[B * (T + 1)]`;
    `active` bool `[B, T+1]` (None: all): only those states are branched, the others cost nothing
    and get 0."""
    states = jax.tree_util.tree_map(
        lambda before, final: jnp.concatenate([before, final[:, None]], axis=1),
        trajectory.states, trajectory.final_state,
    )
    if active is not None:
        states = states.replace(truncated=states.truncated | ~active)
    batch, per_episode = states.turn.shape
    groups = _episode_groups(batch, per_episode) if common_random_numbers else None
    return branch_returns(env, policy_fn, params, _flatten(states), key, num_continuations=num_continuations,
                          chunk_size=chunk_size, sharding=sharding, key_groups=groups)


def branch_state_values(
    env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
    num_continuations: int, chunk_size: int = 512, sharding: Any = None, common_random_numbers: bool = False,
    active: jax.Array | None = None,
) -> tuple[jax.Array, Counts]:
    """`V̂` float32 `[B, T+1]` of every state of `trajectory` and its final states, by branching.

    The mean return of `num_continuations` continuations under `policy_fn` from each live state;
    0 for ended states (which cost nothing). Consumes `key`. Returns `(state_values, counts)`.
    `sharding` splits the continuations over devices (see `branch_returns`).
    `common_random_numbers`: the continuations of one episode's states share their random numbers
    (`branch_returns`' `key_groups`). `active` bool `[B, T+1]`: branch only those states (the
    others cost nothing and get 0).
    """
    result = _branch_every_state(env, policy_fn, params, trajectory, key, num_continuations=num_continuations,
                                 chunk_size=chunk_size, sharding=sharding,
                                 common_random_numbers=common_random_numbers, active=active)
    return result.mean.reshape(trajectory.live.shape[0], -1), result.counts


def branch_action_values(
    env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
    num_continuations: int, max_legal_actions: int | None = None, chunk_size: int = 512, sharding: Any = None,
    common_random_numbers: bool = False, active: jax.Array | None = None,
) -> tuple[jax.Array, Counts]:
    """`Q̂` float32 `[B, T, A]` for every legal action of every state before an action, by branching.

    Forces each legal first action and continues under `policy_fn` (`branch_returns` with
    `force_first_actions`); 0 for ended states and illegal actions. Consumes `key`. `sharding`
    splits the continuations over devices (see `branch_returns`). `common_random_numbers`: the
    continuations of one episode share their random numbers, so two actions with the same next
    state get the same `Q̂`. `active` bool `[B, T]`: branch only those states.
    """
    batch, num_turns = trajectory.live.shape
    states = trajectory.states if active is None else trajectory.states.replace(
        truncated=trajectory.states.truncated | ~active)
    result = branch_returns(env, policy_fn, params, _flatten(states), key,
                            num_continuations=num_continuations, force_first_actions=True,
                            max_legal_actions=max_legal_actions, chunk_size=chunk_size, sharding=sharding,
                            key_groups=_episode_groups(batch, num_turns) if common_random_numbers else None)
    return result.mean.reshape(batch, num_turns, -1), result.counts


def branch_null_values(
    env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
    num_continuations: int, chunk_size: int = 512, sharding: Any = None, common_random_numbers: bool = False,
    active: jax.Array | None = None,
) -> tuple[jax.Array, Counts]:
    """`Q̂(s_t, null)` float32 `[B, T]`: the value of the environment's null action at every state
    before an action, by branching: the null action is stepped (one env step per live state), then
    `num_continuations` continuations under `policy_fn` follow. 0 for ended states, and when the null
    step used the last turn. Consumes `key`. Raises `ValueError` for an environment without a null
    action (`env.null_action`). `common_random_numbers` with the key of `branch_state_values`: a
    null step that reaches the state the taken action reached gets the same continuations.
    `active` bool `[B, T]`: branch only those states."""
    check_replacement("null", env)
    batch, num_turns = trajectory.live.shape
    states = trajectory.states if active is None else trajectory.states.replace(
        truncated=trajectory.states.truncated | ~active)
    states = _flatten(states)
    live = ~states.done
    stepped = jax.vmap(env.step)(states, jnp.full(live.shape, env.null_action, jnp.int32))
    result = branch_returns(env, policy_fn, params, stepped, key, num_continuations=num_continuations,
                            chunk_size=chunk_size, sharding=sharding,
                            key_groups=_episode_groups(batch, num_turns) if common_random_numbers else None)
    values = jnp.where(live, stepped.reward + result.mean, 0.0).reshape(batch, num_turns)
    counts = result.counts.replace(env_steps=result.counts.env_steps + jnp.sum(live, dtype=jnp.int32))
    return values, counts


# ----- progress labels (Math-Shepherd): Φ(s) = P(success | s) from N continuations -----

def branch_state_progress(
    env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
    num_continuations: int, kind: str, chunk_size: int = 512, sharding: Any = None,
) -> tuple[jax.Array, Counts]:
    """`Φ` float32 `[B, T+1]`: the progress estimate of every state of `trajectory` and its final states.

    From `N = num_continuations` continuations under `policy_fn` from each live state (Wang et al.
    2024, Math-Shepherd): `kind="soft"` the mean return (the fraction of the N that succeed, with
    0/1 returns: MAD, arithmetic), `kind="hard"` the largest (1 when any succeeds). 0 for ended
    states (which cost nothing). Consumes `key`. Returns `(progress, counts)`.
    """
    if kind not in PROGRESS_KINDS:
        raise ValueError(f"unknown progress kind {kind!r}; choices: {', '.join(PROGRESS_KINDS)}")
    progress, counts = branch_state_progress_kinds(env, policy_fn, params, trajectory, key,
                                                   num_continuations=num_continuations, kinds=(kind,),
                                                   chunk_size=chunk_size, sharding=sharding)
    return progress[kind], counts


def branch_state_progress_kinds(
    env: Environment, policy_fn: PolicyFn, params: Any, trajectory: Trajectory, key: jax.Array, *,
    num_continuations: int, kinds: tuple[str, ...] = PROGRESS_KINDS, chunk_size: int = 512, sharding: Any = None,
) -> tuple[dict, Counts]:
    """`{kind: Φ float32 [B, T+1]}` for every kind of `kinds`, all from ONE set of continuations
    (`branch_state_progress` gives one kind; with the same `key` its `Φ` equals this one's).
    Consumes `key`. Returns `(progress, counts)`, the counts those of the one set."""
    for kind in kinds:
        if kind not in PROGRESS_KINDS:
            raise ValueError(f"unknown progress kind {kind!r}; choices: {', '.join(PROGRESS_KINDS)}")
    result = _branch_every_state(env, policy_fn, params, trajectory, key, num_continuations=num_continuations,
                                 chunk_size=chunk_size, sharding=sharding)
    batch = trajectory.live.shape[0]
    progress = {"soft": lambda: result.mean,
                "hard": lambda: jnp.where(result.valid, result.returns.max(axis=-1), 0.0)}
    return {kind: progress[kind]().reshape(batch, -1) for kind in kinds}, result.counts


def progress_advantage(trajectory: Trajectory, *, progress: jax.Array) -> jax.Array:
    """Progress credit: `A_t = Φ(h_{t+1}) - Φ(h_t)`, where a step leads, not what it did. `[B, T]`.

    `progress` float32 `[B, T+1]` is `Φ` of the state before each action and, last, the final
    state (`branch_state_progress`). The history after step t has `Φ(h_{t+1}) = r_t + Φ(s_{t+1})`:
    a success already reached counts (the environments here reward only the final, successful
    step), and an ended state has `Φ(s) = 0` whatever is passed. With the soft `Φ` this is the same
    arithmetic as `mc_advantage`'s VinePPO form; the hard `Φ` is a different label.
    """
    return mc_advantage(trajectory, state_values=progress)
