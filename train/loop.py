"""The training loop: `make_train(config)` returns pure functions of one seed, all jittable.

One iteration samples `P = problems_per_iteration` problems, plays `G = attempts_per_problem`
attempts of each with the current policy (the main attempts), computes one advantage per action
with the configured credit estimator (spending label work on the ledger), and takes a policy
gradient step (optional PPO clip, entropy bonus, Adam), or with a value-target `objective`
(`jaxcredit.objectives`) a supervised step on exact values. A run ends when the ledger's budget
counter reaches the budget. The seed alone fixes the initial parameters and the stream of training
problems, so arms with the same seed are paired; training problems come only from the training
part of the problem space (`jaxcredit.holdout`). See docs/training.md#training-and-budget-matched-sweeps.

Shape letters: N seeds, P problems, G attempts per problem, B = P * G episodes, T turns,
A actions, L observation length, E evaluation problems, M critic label states.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxcredit.credit_arms import MAX_ENUMERATED, CreditContext, credit_arm
from jaxcredit.env import Environment
from jaxcredit.holdout import TRAIN, sample_in_split
from jaxcredit.ledger import MAX_COUNT, Ledger, init_ledger, record
from jaxcredit.objectives import objective_loss
from jaxcredit.packed_rows import chunk_at, plan_chunks
from jaxcredit.policy import PolicyConfig, PolicyFunctions, make_policy
from jaxcredit.policy_fn import log_probabilities
from jaxcredit.rollout import Trajectory, rollout
from jaxcredit.sharding import batch_sharding, constrain_batch
from jaxcredit.train.config import TrainConfig
from jaxcredit.train.evaluation import EvalSets, evaluation_sets, make_evaluate, validation_set
from jaxcredit.value_fit import critic_loss


@struct.dataclass
class TrainState:
    """Everything that changes during one seed's run (all arrays; batched over seeds by vmap)."""

    params: Any
    opt_state: Any
    ledger: Ledger
    iteration: jax.Array  # int32 []
    seed: jax.Array  # int32 []
    last_iteration_env_steps: jax.Array  # int32 []: what the latest iteration cost (all accounts)
    prepared: Any = None  # the credit arm's fixed state from its `prepare` (predictor: model and summary)
    nonfinite: Any = None  # int32 []: 0 while every iteration was finite, else 1 + NONFINITE's index of
    # what went non-finite first; never checkpointed (`guards.checkpointed`), so old checkpoints restore
    hyperparams: Any = None  # `Hyperparams`: this member's learning rate and entropy bonus, traced; never
    # checkpointed either (`guards.Checkpoint`: its run's config holds them)


@struct.dataclass
class Hyperparams:
    """The settings a population's members may differ in (`jaxcredit.train.population`), as arrays
    (float32 `[]` per member): traced inputs of the update, so one compiled program trains every
    member. `TRACED_FIELDS` names them after their `TrainConfig` fields."""

    learning_rate: jax.Array
    entropy_coef: jax.Array


TRACED_FIELDS = tuple(f.name for f in dataclasses.fields(Hyperparams))


NONFINITE = ("credit", "gradient", "parameters")  # what the update checks, in order; `TrainState.nonfinite`


def all_finite(tree) -> jax.Array:
    """bool `[]`: every element of every floating leaf of `tree` is finite (None leaves: True)."""
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.bool_(True)


@dataclasses.dataclass(frozen=True)
class Trainer:
    """The pure functions of one configuration. Build with `make_train(config)`.

    `init(seed, hyperparams=None) -> TrainState`, `iterate(state) -> state`, `run_until(state,
    main_episodes_limit, total_env_steps_limit, total_policy_evals_limit) -> state` (iterate while
    the ledger is below all three), `evaluate(params) -> metrics`,
    `train(seed) -> (state, metrics [num_evals + 1])`: the whole run, evaluating before training
    and at each `budget * j / num_evals`. All are jittable and vmappable over `seed` (and over
    `hyperparams`: the learning rate and entropy bonus the update reads from the state, so a
    population of settings shares one program; `jaxcredit.train.population`).
    """

    config: TrainConfig
    env: Environment
    policy_config: PolicyConfig
    eval_sets: EvalSets
    validation_set: Any = None  # held-out problems, leaves [V, ...]: `validation_success_greedy`

    # ----- construction helpers -----
    @property
    def networks(self) -> PolicyFunctions:
        """The policy network's `init_fn`, `policy_fn` and `value_fn` (`jaxcredit.policy.make_policy`)."""
        return make_policy(self.policy_config, self.env)

    @property
    def policy_fn(self):
        return self.networks.policy_fn

    @property
    def value_fn(self):
        return self.networks.value_fn

    @property
    def optimizer(self) -> optax.GradientTransformation:
        return self.optimizer_at(self.config.learning_rate)

    def optimizer_at(self, learning_rate) -> optax.GradientTransformation:
        """Gradient clipping then Adam at `learning_rate` (a float, or float32 `[]` traced).

        `optax.adam` scales by a constant learning rate with a stateless `scale`, so the state's
        pytree is the same for a float and a traced array (a checkpoint restores under either), and
        the update multiplies by the same float32 value: a run's numbers do not depend on which."""
        return optax.chain(optax.clip_by_global_norm(self.config.max_grad_norm), optax.adam(learning_rate))

    @property
    def hyperparams(self) -> Hyperparams:
        """The config's `Hyperparams` (float32 `[]` each): what `init` puts in a state by default."""
        return Hyperparams(**{name: jnp.float32(getattr(self.config, name)) for name in TRACED_FIELDS})

    def thresholds(self) -> list[int]:
        """The budget-counter values at which the run evaluates (the last is the budget)."""
        c = self.config
        return [c.budget * j // c.num_evals for j in range(1, c.num_evals + 1)]

    @property
    def live_chunk(self) -> int | None:
        """The main rollout's `live_chunk`: the default, or the whole batch when it is sharded over devices."""
        return None if self.config.shard_devices == 1 else self.config.episodes_per_iteration

    @property
    def batch_sharding(self):
        """The episode batch axis split over `config.shard_devices` devices; None (one device) by default."""
        return None if self.config.shard_devices == 1 else batch_sharding(self.config.shard_devices)

    # ----- the run -----
    def init(self, seed: jax.Array, hyperparams: Hyperparams | None = None) -> TrainState:
        """Fresh parameters for `seed` (int32 `[]`), an empty ledger, iteration 0, `hyperparams`
        (None: the config's); for an arm with a `prepare` (predictor), its one-time work (given the
        validation set), charged to the ledger here and kept as `prepared`."""
        params = self.networks.init_fn(initial_params_key(seed))
        ledger, prepared = init_ledger(), None
        arm = credit_arm(self.config.credit)
        if arm.prepare is not None:
            preparation = arm.prepare(self._context(params), jax.random.fold_in(jax.random.key(seed), 4),
                                      self.draw_problem, self.validation_set)
            prepared = preparation.state
            for account, counts in preparation.charge.items():
                ledger = record(ledger, counts, account=account)
        return TrainState(params=params, opt_state=self.optimizer.init(params), ledger=ledger,
                          iteration=jnp.zeros((), jnp.int32), seed=jnp.asarray(seed, jnp.int32),
                          last_iteration_env_steps=jnp.zeros((), jnp.int32), prepared=prepared,
                          nonfinite=jnp.zeros((), jnp.int32),
                          hyperparams=self.hyperparams if hyperparams is None else hyperparams)

    def draw_problem(self, key: jax.Array):
        """One training problem (the training part only, `holdout.sample_in_split`; the whole space
        when `holdout_fraction` is 0); consumes `key`."""
        if self.config.holdout_fraction == 0:
            return self.env.sample_problem(key)
        return sample_in_split(self.env, key, TRAIN, holdout_fraction=self.config.holdout_fraction)

    def _keys(self, state: TrainState):
        key = jax.random.key(state.seed)
        return [jax.random.fold_in(jax.random.fold_in(key, stream), state.iteration) for stream in (1, 2, 3)]

    def sample_episodes(self, state: TrainState):
        """The iteration's problems `[P]` and their `G` starting states each, `[B]` (problem-major).

        Problems are drawn from the training part of the problem space only (`holdout.sample_in_split`)."""
        problem_key, _, _ = self._keys(state)
        return self.draw_episodes(problem_key)

    def draw_episodes(self, key: jax.Array):
        """`(problems [P], starts [B])`: `P` training problems drawn with `key` (consumed) and their
        `G` starting states each (problem-major), what one iteration plays."""
        c = self.config
        problems = jax.vmap(self.draw_problem)(jax.random.split(key, c.problems_per_iteration))
        repeated = jax.tree_util.tree_map(lambda x: jnp.repeat(x, c.attempts_per_problem, axis=0), problems)
        return problems, jax.vmap(self.env.init_problem)(repeated)

    def play(self, state: TrainState):
        """`(problems [P], trajectory [B, T], main_counts, label_key)`: the iteration's main attempts
        with the current policy, and the key its credit draws from."""
        problems, starts = self.sample_episodes(state)
        starts = constrain_batch(starts, self.batch_sharding)  # [B] split over devices (one device: no-op)
        _, action_key, label_key = self._keys(state)
        trajectory, main_counts = rollout(self.env, self.policy_fn, state.params, starts, action_key,
                                          num_turns=self.env.max_turns, live_chunk=self.live_chunk)
        return problems, constrain_batch(trajectory, self.batch_sharding), main_counts, label_key

    def iterate(self, state: TrainState) -> TrainState:
        """One iteration: main attempts, credit, one policy update (`ppo_epochs` epochs).

        It also checks that the credit, every epoch's gradient and the new parameters are finite
        (one boolean reduction each); the first that is not sets `nonfinite`, which ends `run_until`.
        The learning rate and entropy bonus are the state's `hyperparams` (the config's without)."""
        c = self.config
        hyperparams = self.hyperparams if state.hyperparams is None else state.hyperparams
        optimizer = self.optimizer_at(hyperparams.learning_rate)
        problems, trajectory, main_counts, label_key = self.play(state)
        ledger = record(state.ledger, main_counts, account="main")
        result, ledger = self.credit(state.params, trajectory, problems, label_key, ledger, prepared=state.prepared)
        advantage, critic_batch = result.advantage, self._weighted(result)
        action_values = None if c.objective == "pg" else result.action_values

        def epoch(carry, _):
            params, opt_state, finite = carry
            grads = self.gradient(params, trajectory, advantage, critic_batch, action_values,
                                  entropy_coef=hyperparams.entropy_coef)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state, finite & all_finite(grads)), None

        (params, opt_state, grads_finite), _ = jax.lax.scan(
            epoch, (state.params, state.opt_state, jnp.bool_(True)), None, length=c.ppo_epochs)
        checks = (all_finite((advantage, action_values)), grads_finite, all_finite(params))  # NONFINITE's order
        first = jnp.argmin(jnp.stack(checks)).astype(jnp.int32) + 1  # the first False
        nonfinite = jnp.where(state.nonfinite > 0, state.nonfinite, jnp.where(jnp.all(jnp.stack(checks)), 0, first))
        prepared = state.prepared if result.prepared is None else result.prepared  # an arm's memory, carried on
        return state.replace(params=params, opt_state=opt_state, ledger=ledger, iteration=state.iteration + 1,
                             last_iteration_env_steps=ledger.total_env_steps - state.ledger.total_env_steps,
                             nonfinite=nonfinite, prepared=prepared)

    def run_until(self, state: TrainState, main_episodes_limit: jax.Array, total_env_steps_limit: jax.Array,
                  total_policy_evals_limit: jax.Array) -> TrainState:
        """Iterate while the ledger is below all three limits (int32 `[]`; pass `MAX_COUNT` for no limit)
        and every iteration was finite (`nonfinite` 0: a non-finite one is the last).

        The limits are arguments, not configuration, so one compiled program serves every
        budget and every regime (the driver vmaps them with the seeds: one limit per seed).
        Which iterations run depends only on the limits reached, never on where earlier calls
        stopped: stopping at more limits on the way changes nothing after them.
        """
        def below(s):
            return ((s.ledger.main_episodes < main_episodes_limit) & (s.ledger.total_env_steps < total_env_steps_limit)
                    & (s.ledger.total_policy_evals < total_policy_evals_limit) & (s.nonfinite == 0))

        return jax.lax.while_loop(below, self.iterate, state)

    def limits(self, threshold) -> tuple[jax.Array, jax.Array, jax.Array]:
        """`(main_episodes_limit, total_env_steps_limit, total_policy_evals_limit)` for a budget-counter
        `threshold` (an int, or int `[N]`: one per seed; the other limits are `MAX_COUNT`, of the same shape)."""
        threshold = jnp.asarray(threshold, jnp.int32)
        no_limit = jnp.full(threshold.shape, MAX_COUNT, jnp.int32)
        order = ("main_episodes", "total_env_steps", "total_policy_evals")
        return tuple(threshold if counter == self.config.budget_counter else no_limit for counter in order)

    def evaluate(self, params: Any) -> dict:
        """Metrics of `params` on the fixed evaluation sets and the validation set (see `train.evaluation`)."""
        return make_evaluate(self.env, self.policy_fn, self.eval_sets, seed=self.config.eval_seed,
                             validation=self.validation_set)(params)

    def train(self, seed: jax.Array):
        """The whole run of one seed: `(final state, metrics)` with metrics stacked `[num_evals + 1]`
        (row 0 before training) and each row's ledger."""
        state = self.init(seed)
        first = (self.evaluate(state.params), state.ledger)

        def segment(state, limits):
            state = self.run_until(state, *limits)
            return state, (self.evaluate(state.params), state.ledger)

        limits = [self.limits(t) for t in self.thresholds()]
        limits = tuple(jnp.stack(column) for column in zip(*limits))
        state, rest = jax.lax.scan(segment, state, limits)
        stacked = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)
        return state, stacked

    # ----- credit -----
    def _context(self, params, prepared=None) -> CreditContext:
        return CreditContext(env=self.env, policy_fn=self.policy_fn, params=params, config=self.config,
                             value_fn=self.value_fn, sharding=self.batch_sharding, prepared=prepared)

    def credit(self, params, trajectory: Trajectory, problems, key, ledger: Ledger, *, prepared=None):
        """`(result, ledger)`: the configured arm's `CreditResult` (`jaxcredit.arm_registry`) and its
        cost recorded on the ledger. `prepared` is the state's `prepared` (an arm with a `prepare`)."""
        context = self._context(params, prepared)
        result = credit_arm(self.config.credit).compute(context, trajectory, problems, key)
        for account, counts in result.charge.items():
            ledger = record(ledger, counts, account=account)
        return result, ledger

    def advantages(self, params, trajectory: Trajectory, problems, key, ledger: Ledger, *, prepared=None):
        """`(advantage [B, T], critic_batch, ledger)`: `credit`'s advantages and critic batch.

        `critic_batch` is `(observation [M, L], mask [M, A], target [M], valid [M], coef)` (coef: the
        weight of its squared error) for an arm that trains the value head (critic), else None.
        """
        result, ledger = self.credit(params, trajectory, problems, key, ledger, prepared=prepared)
        return result.advantage, self._weighted(result), ledger

    @staticmethod
    def _weighted(result):
        """The critic batch with the weight of its loss appended (None without a batch)."""
        return None if result.critic_batch is None else (*result.critic_batch, result.critic_coef)

    # ----- loss -----
    @property
    def gradient_chunk(self) -> int:
        """C: steps per chunk of `gradient` (a static size: about an eighth of `B * T`, at least 32).

        A packed afterstate policy (`AfterstatePolicy.packed`) takes every step in one chunk: it
        already scores only the legal afterstates, none on an ended episode's steps, and one
        chunk lets it pack the rows of the whole batch (measured 1.6x faster per iteration on
        arithmetic with 3 numbers than chunks of steps)."""
        steps = self.config.episodes_per_iteration * self.env.max_turns
        if getattr(self.policy_fn, "packed", False):
            return steps
        return min(steps, max(32, -(-steps // 8)))

    def _step_objective(self, params, observation, legal_action_mask, action, old_log_prob, advantage,
                        action_values, entropy_coef):
        """float32 `[...]`: `x_t`, each step's term of the loss before weighting (see `loss`).

        `observation` int32 `[..., L]`, `legal_action_mask` bool `[..., A]`, `action` int32 `[...]`,
        `old_log_prob` and `advantage` float32 `[...]`, `action_values` float32 `[..., A]` or None,
        `entropy_coef` a float or float32 `[]`.
        """
        c = self.config
        log_probs = log_probabilities(self.policy_fn(params, observation, legal_action_mask), legal_action_mask)
        if c.objective == "pg":
            chosen = jnp.take_along_axis(log_probs, action[..., None], axis=-1)[..., 0]
            ratio = jnp.exp(chosen - old_log_prob)
            surrogate = ratio * advantage
            if c.clip_epsilon > 0:
                surrogate = jnp.minimum(surrogate, jnp.clip(ratio, 1 - c.clip_epsilon, 1 + c.clip_epsilon) * advantage)
        else:
            step_loss, _ = objective_loss(c.objective, log_probs, action_values, legal_action_mask,
                                          temperature=c.objective_temperature)
            surrogate = -step_loss
        entropy = -jnp.sum(jnp.where(legal_action_mask, jnp.exp(log_probs) * log_probs, 0.0), axis=-1)
        return surrogate + entropy_coef * entropy

    def step_weights(self, trajectory: Trajectory, action_values: jax.Array | None = None) -> jax.Array:
        """float32 `[B, T]`: `w_t >= 0` with the policy part of the loss `-Σ_t w_t x_t`; 0 on the steps
        the loss does not count (not live; for a value-target objective, states it skips).

        They depend on the trajectory (and `action_values`) only, never on the parameters."""
        c = self.config
        counted = trajectory.live
        if c.objective != "pg":
            if action_values is None:
                raise ValueError(f"objective {c.objective!r} needs the values of every legal action; credit "
                                 f"{c.credit!r} gives none")
            mask = trajectory.legal_action_mask
            _, state_counted = objective_loss(c.objective, jnp.zeros(mask.shape, jnp.float32), action_values, mask,
                                              temperature=c.objective_temperature)
            counted = counted & state_counted
        if c.loss_normalisation == "sequence":
            steps = counted.sum(axis=1, keepdims=True)
            episodes = jnp.maximum(jnp.sum(steps > 0), 1)
            return jnp.where(counted, 1.0 / (jnp.maximum(steps, 1) * episodes).astype(jnp.float32), 0.0)
        return jnp.where(counted, 1.0 / jnp.maximum(counted.sum(), 1).astype(jnp.float32), 0.0)

    def _critic_loss(self, params, critic_batch) -> jax.Array:
        *batch, coef = critic_batch
        return critic_loss(self.value_fn, params, tuple(batch), coef)

    def loss(self, params, trajectory: Trajectory, advantage: jax.Array, critic_batch,
             action_values: jax.Array | None = None, *, entropy_coef=None) -> jax.Array:
        """Policy-gradient loss over live steps (PPO-clipped when `clip_epsilon > 0`), minus the
        entropy bonus, plus the critic's squared error when training a critic (`critic_batch`:
        `(observation [M, L], mask [M, A], target [M], valid [M], coef)`, as `advantages` gives it).

        With a value-target `objective` (`dense`, `pairwise`, `hard`; `jaxcredit.objectives`),
        `x_t = -L(s_t) + entropy_coef H_t` instead, on the live steps the objective counts (pairwise:
        those with an ordered pair of legal actions), from `action_values` float32 `[B, T, A]`, the
        exact value of every legal action at each step's state; `advantage` is then not used.

        With `x_t = ratio_t A_t + entropy_coef H_t` on the live steps (`ratio_t` clipped as PPO
        when `clip_epsilon > 0`), `loss_normalisation` averages them as `step` (the default):
        `-Σ_{i,t} x_{i,t} / (number of live steps)`, every action weighs the same; or `sequence`
        (GRPO, Shao et al. 2024): `-mean_i (Σ_t x_{i,t} / T_i)` over episodes with `T_i >= 1`
        live steps, every episode weighs the same. `step` is the default because the arms
        compared here give each action its own credit: under `sequence` an action of a long
        (failing, repairing) episode weighs `1 / T_i` of one in a short episode, which scales
        action-level credit by episode length (the length bias DAPO, Yu et al. 2025, removes the
        same way). Both are `-Σ_t w_t x_t` with `step_weights`.

        `entropy_coef` (a float or float32 `[]`; None: the config's) weighs the entropy bonus.

        This evaluates the network at every step slot, live or not; the update uses `gradient`,
        which gives the same gradient from the counted steps alone.
        """
        entropy_coef = self.config.entropy_coef if entropy_coef is None else entropy_coef
        weights = self.step_weights(trajectory, action_values)
        x = self._step_objective(params, trajectory.observation, trajectory.legal_action_mask, trajectory.action,
                                 trajectory.log_prob, advantage, action_values, entropy_coef)
        loss = -jnp.sum(jnp.where(weights > 0, weights * x, 0.0))
        if critic_batch is not None:
            loss = loss + self._critic_loss(params, critic_batch)
        return loss

    def gradient(self, params, trajectory: Trajectory, advantage: jax.Array, critic_batch,
                 action_values: jax.Array | None = None, *, entropy_coef=None):
        """The gradient of `loss` with respect to `params`, computed on the counted steps only.

        The steps with a nonzero weight (`step_weights`) are gathered to the front and the
        gradient of `-Σ w_t x_t` is summed over chunks of `gradient_chunk` of them in a
        `lax.while_loop` that stops after the last counted step: the ended episodes' padding
        (most step slots once a policy finishes its episodes early) costs no forward or backward
        pass. Equal to `jax.grad(loss)` up to float summation order (tested). With the batch
        sharded over devices it is `jax.grad(loss)` itself. `entropy_coef` as in `loss`.
        """
        entropy_coef = self.config.entropy_coef if entropy_coef is None else entropy_coef
        if self.batch_sharding is not None:
            return jax.grad(self.loss)(params, trajectory, advantage, critic_batch, action_values,
                                       entropy_coef=entropy_coef)
        weights = self.step_weights(trajectory, action_values).reshape(-1)
        chunk = self.gradient_chunk
        total_steps = weights.shape[0]
        order, count = plan_chunks(weights > 0, chunk)
        steps = dict(observation=trajectory.observation, legal_action_mask=trajectory.legal_action_mask,
                     action=trajectory.action, old_log_prob=trajectory.log_prob, advantage=advantage,
                     action_values=action_values)
        steps = {name: None if x is None else x.reshape(total_steps, *x.shape[2:]) for name, x in steps.items()}

        def chunk_loss(p, index, weight):
            taken = {name: None if x is None else x[index] for name, x in steps.items()}
            x = self._step_objective(p, **taken, entropy_coef=entropy_coef)
            return -jnp.sum(jnp.where(weight > 0, weight * x, 0.0))

        def body(carry):
            start, total = carry
            index, valid = chunk_at(order, count, start, chunk)
            weight = jnp.where(valid, weights[index], 0.0)
            grads = jax.grad(chunk_loss)(params, index, weight)
            return start + chunk, jax.tree_util.tree_map(jnp.add, total, grads)

        zero = jax.tree_util.tree_map(jnp.zeros_like, params)
        _, total = jax.lax.while_loop(lambda carry: carry[0] < count, body, (jnp.zeros((), jnp.int32), zero))
        if critic_batch is not None:
            critic_grads = jax.grad(self._critic_loss)(params, critic_batch)
            total = jax.tree_util.tree_map(jnp.add, total, critic_grads)
        return total


def budget_count(ledger: Ledger, counter: str) -> jax.Array:
    """int32 `[]`: the ledger counter a budget is measured in."""
    return getattr(ledger, counter)  # `total_env_steps` and `total_policy_evals` are the ledger's properties


def initial_params_key(seed) -> jax.Array:
    """The key a run initialises its parameters from for `seed` (int `[]`): the same in every arm,
    so paired seeds start from the same network."""
    return jax.random.fold_in(jax.random.key(seed), 0)


def policy_config_of(config: TrainConfig) -> PolicyConfig:
    """The network `config` trains (`PolicyConfig` from its network fields)."""
    return PolicyConfig(d_model=config.d_model, num_layers=config.num_layers, num_heads=config.num_heads,
                        mlp_dim=config.mlp_dim, policy_input=config.policy_input,
                        afterstate_lookahead=config.afterstate_lookahead)


def initial_policy(config: TrainConfig, seed_index: int = 0):
    """`(env, policy_fn, params)`: the untrained network a run of `config` starts seed
    `config.seed + seed_index` from (the parameters `Trainer.init` draws; no evaluation sets built)."""
    from jaxcredit.envs import make

    if not 0 <= seed_index < config.num_seeds:
        raise ValueError(f"seed index {seed_index} is not one of the run's {config.num_seeds} seeds")
    env = make(config.env, **config.env_kwargs)
    network = make_policy(policy_config_of(config), env)
    return env, network.policy_fn, network.init_fn(initial_params_key(config.seed + seed_index))


def make_train(config: TrainConfig) -> Trainer:
    """Validate `config` against its environment and build the run's pure functions.

    Raises `ValueError` for a configuration that cannot run (e.g. an exact or solver arm on an
    environment too large to enumerate).
    """
    from jaxcredit.envs import make

    env = make(config.env, **config.env_kwargs)
    policy_config = policy_config_of(config)
    arm = credit_arm(config.credit)
    if arm.enumerates and env.num_positions * env.num_actions > MAX_ENUMERATED:
        raise ValueError(f"credit {config.credit!r} enumerates {env.num_positions} positions x {env.num_actions} "
                         f"actions per problem: too large for an exact arm; use a smaller environment")
    if arm.check_environment is not None:
        arm.check_environment(config.credit_options, env)
    if config.shard_devices > 1:
        batch_sharding(config.shard_devices)  # raises ValueError when there are fewer devices
    return Trainer(config=config, env=env, policy_config=policy_config, eval_sets=evaluation_sets(env, config),
                   validation_set=validation_set(env, config))
