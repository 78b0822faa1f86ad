"""The gymnax adapter: spaces and encodings, auto-reset against a hand loop over the jaxcredit env
(fresh draws and the reset pool), the mask in the observation, both step forms, refusals, the
distribution of restarted problems with and without the pool, and why rejax needs the five-value
step. (An unmodified rejax PPO learning default MAD with the adapter's defaults is docs/environments.md's
example, run by tests/test_readme_examples.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

pytest.importorskip("gymnax")

from gymnax.environments import spaces  # noqa: E402
from gymnax.wrappers.purerl import LogWrapper  # noqa: E402

from jaxcredit.envs import make, make_gymnax, problem_set  # noqa: E402
from jaxcredit.envs.encodings import encode  # noqa: E402
from jaxcredit.envs.gymnax_adapter import GymnaxAdapter, GymnaxParams, GymnaxState, pool_index  # noqa: E402

SMALL_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 4}


def test_spaces_params_and_encodings():
    adapter, params = make_gymnax("MAD-v0", **SMALL_MAD)  # L = 4 tokens, V = 7, A = 7
    assert isinstance(adapter.action_space(params), spaces.Discrete) and adapter.action_space(params).n == 7
    box = adapter.observation_space(params)
    assert box.shape == (28,) and box.dtype == jnp.float32 and (box.low, box.high) == (0, 1)
    assert params.max_steps_in_episode == 4 and adapter.name == "jaxcredit-mad"
    assert params.reset_pool.shape == (65_536, 3) and adapter.default_params is adapter.default_params
    obs, state = adapter.reset(jax.random.key(0), params)
    assert obs.dtype == jnp.float32 and bool(box.contains(obs)) and float(obs.sum()) == 4.0
    np.testing.assert_array_equal(obs, jax.nn.one_hot(state.state.observation, 7).reshape(-1))
    assert hash(adapter) == hash(GymnaxAdapter(make("mad", **SMALL_MAD)))  # a static jit argument

    tokens, _ = make_gymnax("mad", encoding="tokens", reset_pool=0, **SMALL_MAD)
    embedding, _ = make_gymnax("mad", encoding="embedding", reset_pool=0, **SMALL_MAD)
    assert (tokens.observation_space().shape, tokens.observation_space().high) == ((4,), 6)
    assert (embedding.observation_space().shape, embedding.observation_space().high) == ((4,), 27)
    masked, masked_params = make_gymnax("mad", action_mask_in_observation=True, reset_pool=0, **SMALL_MAD)
    space = masked.observation_space(masked_params)
    assert isinstance(space, spaces.Dict) and space.spaces["action_mask"].shape == (7,)
    assert masked_params.reset_pool is None
    obs, state = masked.reset(jax.random.key(0), masked_params)
    assert obs["action_mask"].tolist() == [True, True, True, False, False, False, True]  # on reset too
    for bad, message in [({"encoding": "ids"}, "unknown observation encoding"),
                         ({"reset_pool": 1000}, "power of two"),
                         ({"five_value_step": 1}, "True or False")]:
        with pytest.raises(ValueError, match=message):
            make_gymnax("mad", **bad)
    with pytest.raises(ValueError, match="jaxcredit Environment"):
        GymnaxAdapter("mad")
    uneven = params.replace(reset_pool=params.reset_pool[:1000])  # an index mask would favour some problems
    with pytest.raises(ValueError, match="power-of-two number of problems, got 1000"):
        adapter.step(jax.random.key(0), state, 0, uneven)


@pytest.mark.parametrize("name, options", [
    ("mad", {"reset_pool": 0, "action_mask_in_observation": True}),           # fresh draws, one_hot + mask
    ("mad", {"encoding": "tokens"}),                                          # the pool
    ("arithmetic", {"encoding": "embedding", "action_mask_in_observation": True}),
])
def test_auto_reset_matches_a_hand_loop_over_the_env(name, options):
    """200 random actions (legal, illegal and out of range) through `step` equal a plain loop that
    steps the jaxcredit env and, when an episode ends, starts the problem the adapter promises:
    `env.init(key)` with fresh draws, else the pool problem at `pool_index(key)`. The observation
    (and the mask inside it) equals the env's, after `reset` and after every step."""
    env = make(name, **(SMALL_MAD if name == "mad" else {"count": 3}))
    adapter, five = GymnaxAdapter(env, **options), GymnaxAdapter(env, five_value_step=True, **options)
    env_step, env_start = jax.jit(env.step), jax.jit(env.init_problem)
    if name == "mad":
        params = adapter.default_params
        obs, gstate = adapter.reset(jax.random.key(1), params)
    else:  # a host-drawn pool and first episode: arithmetic's sampler takes seconds to compile
        pool = problem_set("default", 64, 0, count=3)
        params = GymnaxParams(max_steps_in_episode=env.max_turns, reset_pool=pool)
        start = env_start(jax.tree_util.tree_map(lambda leaf: leaf[0], pool))
        obs, gstate = adapter.observe(start), GymnaxState(state=start, time=start.turn)
    pool = params.reset_pool
    rng = np.random.default_rng(0)
    state = gstate.state
    episodes = 0
    for i in range(200):
        observation = obs["observation"] if adapter.action_mask_in_observation else obs
        np.testing.assert_array_equal(observation, encode(env, state.observation, adapter.encoding))
        if adapter.action_mask_in_observation:
            np.testing.assert_array_equal(obs["action_mask"], state.legal_action_mask)
        action = int(rng.integers(-1, env.num_actions + 1))
        key = jax.random.key(100 + i)
        obs, next_gstate, reward, terminated, truncated, info = adapter.step(key, gstate, action, params)
        if pool is not None:  # the five-value form (compiled once, for the pool cases)
            obs5, _, reward5, done5, info5 = five.step(key, gstate, action, params)
            assert float(reward5) == float(reward) and bool(done5) == bool(terminated | truncated)
            assert set(info5) == set(info)
            jax.tree_util.tree_map(np.testing.assert_array_equal, obs5, obs)
        stepped = env_step(state, action)
        final = info["final_observation"]
        final = final["observation"] if adapter.action_mask_in_observation else final
        np.testing.assert_array_equal(final, encode(env, stepped.observation, adapter.encoding))
        assert float(reward) == float(stepped.reward)
        assert bool(terminated) == bool(stepped.terminated) and bool(truncated) == bool(stepped.truncated)
        assert bool(info["rejected"]) == bool(stepped.rejected)
        assert float(info["discount"]) == (0.0 if bool(stepped.terminated) else 1.0)
        if bool(stepped.done):
            episodes += 1
            if pool is None:  # `reset` draws `env.init(key)`, compiled already
                state = adapter.reset(key, params)[1].state
            else:
                index = pool_index(key, jax.tree_util.tree_leaves(pool)[0].shape[0])
                state = env_start(jax.tree_util.tree_map(lambda leaf, i=index: leaf[i], pool))
        else:
            state = stepped
        np.testing.assert_array_equal(info["legal_action_mask"], state.legal_action_mask)
        np.testing.assert_array_equal(adapter.legal_action_mask(next_gstate), state.legal_action_mask)
        assert int(next_gstate.time) == int(state.turn)
        gstate = next_gstate
        if i == 0:
            compiled = type(adapter).step._cache_size()
    assert episodes >= 10
    assert type(adapter).step._cache_size() == compiled  # jitted once: 200 calls, no retrace


def test_refused_action_uses_a_turn_and_changes_nothing():
    adapter, params = make_gymnax("mad", reset_pool=0, **SMALL_MAD)
    obs, state = adapter.reset(jax.random.key(0), params)
    unselect_0 = 3  # cell 0 is unselected at the start: unselecting it is illegal
    obs2, state2, reward, terminated, truncated, info = adapter.step(jax.random.key(1), state, unselect_0, params)
    assert bool(info["rejected"]) and not bool(terminated | truncated) and float(reward) == 0.0
    assert np.array_equal(obs2, obs) and int(state2.time) == 1
    for action in (99, -5):  # out of range: refused the same way
        _, state3, _, _, _, info = adapter.step(jax.random.key(2), state2, action, params)
        assert bool(info["rejected"]) and int(state3.time) == 2


def test_mask_through_gymnax_log_wrapper():
    """A wrapped adapter still shows the mask: in the observation, and via `legal_action_mask`."""
    adapter, params = make_gymnax("mad", action_mask_in_observation=True, reset_pool=0, **SMALL_MAD)
    logged = LogWrapper(adapter)
    obs, state = logged.reset(jax.random.key(0), params)
    np.testing.assert_array_equal(adapter.legal_action_mask(state), obs["action_mask"])
    obs, state, *_ = logged.step(jax.random.key(1), state, 0, params)  # select 0
    assert obs["action_mask"].tolist() == [False, True, True, True, False, False, True]
    np.testing.assert_array_equal(adapter.legal_action_mask(state), obs["action_mask"])


def test_pool_index_is_uniform_for_split_and_hand_made_keys():
    """65,536 keys from `jax.random.split` and 65,536 hand-made keys `key(0), key(1), ...` each
    spread evenly over a pool of 64 (chi-square p > 0.001); the same key gives the same index."""
    index = jax.jit(jax.vmap(lambda key: pool_index(key, 64)))
    split_keys = jax.random.split(jax.random.key(5), 65_536)
    hand_made = jax.vmap(jax.random.key)(jnp.arange(65_536))
    for keys in (split_keys, hand_made):
        counts = np.bincount(np.asarray(index(keys)), minlength=64)
        assert counts.shape == (64,) and stats.chisquare(counts).pvalue > 1e-3, counts
    np.testing.assert_array_equal(index(split_keys[:100]), index(split_keys)[:100])
    assert int(pool_index(jax.random.key(3), 1)) == 0


def _restarted_problems(adapter, params, *, batch, steps):
    """Tapes `[N, length]` of the episodes `step` started after an ended one (every action is a
    wrong submit, so each episode ends at the turn limit)."""
    step = jax.vmap(adapter.step, in_axes=(0, 0, None, None))

    @jax.jit
    def run(key):
        _, state = jax.vmap(adapter.reset, in_axes=(0, None))(jax.random.split(key, batch), params)

        def turn(state, step_key):
            _, state, _, terminated, truncated, _ = step(jax.random.split(step_key, batch), state,
                                                         adapter.env.submit_action, params)
            return state, (terminated | truncated, state.state.problem)

        _, (done, tapes) = jax.lax.scan(turn, state, jax.random.split(key, steps))
        return done, tapes

    done, tapes = run(jax.random.key(7))
    return np.asarray(tapes)[np.asarray(done)]


def test_restarted_problems_have_the_same_distribution_with_and_without_the_pool():
    """Small MAD has 18 tapes with known probabilities: 1 or 2 useful cells (1/2 each), places
    uniform among the C(3, k), tokens uniform in {0, 1}, so P = 1/12 for one useful cell and 1/24
    for two. Restarts with fresh draws and from the pool each fit these probabilities (chi-square
    p > 0.001), and fit each other (two-sample chi-square); a blank tape never appears."""
    env = make("mad", **SMALL_MAD)
    fresh = _restarted_problems(GymnaxAdapter(env, encoding="tokens", reset_pool=0), None, batch=2048, steps=24)
    pooled_adapter = GymnaxAdapter(env, encoding="tokens")
    pooled = _restarted_problems(pooled_adapter, pooled_adapter.make_params(jax.random.key(3)), batch=2048, steps=24)
    assert len(fresh) == len(pooled) == 2048 * 6  # every 4 steps, every episode

    tapes = [np.array(t) for t in np.ndindex(3, 3, 3)]  # cell values 0 blank, 1 token 0, 2 token 1
    probability = {tuple(t - 1): {1: 1 / 12, 2: 1 / 24}.get(int((t > 0).sum()), 0.0) for t in tapes}
    assert abs(sum(probability.values()) - 1.0) < 1e-12
    support = [t for t, p in probability.items() if p > 0]
    counts = {}
    for side, sample in (("fresh", fresh), ("pooled", pooled)):
        seen = {}
        for tape in map(tuple, sample.tolist()):
            seen[tape] = seen.get(tape, 0) + 1
        assert set(seen) <= set(support), f"{side}: a tape outside the support"
        counts[side] = np.array([seen.get(t, 0) for t in support])
        expected = np.array([probability[t] for t in support]) * len(sample)
        assert stats.chisquare(counts[side], expected).pvalue > 1e-3, (side, counts[side], expected)
    assert stats.chi2_contingency(np.stack([counts["fresh"], counts["pooled"]])).pvalue > 1e-3


def test_arithmetic_pool_marginals_match_fresh_draws():
    """The pool is `env.sample_problem` draws (chunked, one key each): per-slot number counts and
    target deciles match 4,096 fresh draws (two-sample chi-square), and the pool repeats problems
    no more often than fresh draws do."""
    env = make("arithmetic", count=3)
    pool = GymnaxAdapter(env, reset_pool=4096).make_params(jax.random.key(0)).reset_pool
    fresh = jax.jit(jax.vmap(env.sample_problem))(jax.random.split(jax.random.key(1), 4096))
    pool_numbers, fresh_numbers = np.asarray(pool.numbers), np.asarray(fresh.numbers)
    for slot in range(3):
        table = np.stack([np.bincount(x[:, slot], minlength=10)[1:] for x in (pool_numbers, fresh_numbers)])
        assert stats.chi2_contingency(table).pvalue > 1e-3, table
    edges = np.unique(np.quantile(np.asarray(fresh.target), np.linspace(0, 1, 11)[1:-1]))
    table = np.stack([np.bincount(np.searchsorted(edges, np.asarray(x.target), side="right"), minlength=len(edges) + 1)
                      for x in (pool, fresh)])
    assert stats.chi2_contingency(table).pvalue > 1e-3, table

    def distinct(numbers, target):
        return len({(*n, t) for n, t in zip(numbers.tolist(), np.asarray(target).tolist())})

    assert distinct(pool_numbers, pool.target) >= 0.97 * distinct(fresh_numbers, fresh.target)


def test_rejax_wrapping_the_adapter_fails_with_recursion_error():
    """What docs/environments.md's warning says: rejax deep-copies its config, and gymnax's wrappers
    forward the copy's missing `_env` to themselves (fixed by `five_value_step=True`, no wrapper)."""
    rejax = pytest.importorskip("rejax")
    from gymnax.wrappers.compat import LegacyStepAPIWrapper

    adapter, params = make_gymnax("mad", reset_pool=0, **SMALL_MAD)
    with pytest.raises(RecursionError, match="maximum recursion depth exceeded"):
        rejax.PPO.create(env=LegacyStepAPIWrapper(adapter), env_params=params)
