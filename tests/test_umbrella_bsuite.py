"""Umbrella against bsuite's own `UmbrellaChain`, step by step, on many random action sequences.

bsuite draws its coins from a NumPy generator while an episode runs. The test wraps that generator,
records every draw of an episode (scalar draws: need, the umbrella at reset, then one noise reward
per step before the last; vector draws: the distractor bits of each observation), builds the
jaxcredit problem from them, replays the same actions through `jit(vmap(step))` and the
plain-Python reference, and compares at every step what both sides show: the need and have bits,
the time to live, the distractor bits, the reward, the end of the episode and its discount. bsuite's
sweeps and its score are compared with `LENGTH_SWEEP`, `DISTRACT_SWEEP` and `bsuite_score`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

umbrella_chain = pytest.importorskip("bsuite.environments.umbrella_chain")

from bsuite.experiments.umbrella_distract import sweep as distract_sweep  # noqa: E402
from bsuite.experiments.umbrella_distract.umbrella_distract import load as load_distract  # noqa: E402
from bsuite.experiments.umbrella_length import sweep as length_sweep  # noqa: E402

from jaxcredit.envs import UmbrellaProblem, make, make_reference  # noqa: E402
from jaxcredit.envs.umbrella import DISTRACT_SWEEP, LENGTH_SWEEP, NUM_EPISODES, bsuite_score  # noqa: E402


class RecordingGenerator:
    """bsuite's `RandomState` with every `binomial` draw recorded, scalars and vectors apart."""

    def __init__(self, rng: np.random.RandomState):
        self.rng = rng
        self.scalars, self.vectors = [], []

    def binomial(self, n, p, size=None):
        value = self.rng.binomial(n, p, size=size)
        (self.scalars if size is None else self.vectors).append(value)
        return value


def play_bsuite(env, actions):
    """One bsuite episode: its timesteps (reset first) and the jaxcredit problem of its draws."""
    recorder = RecordingGenerator(env._rng)  # bsuite keeps its generator here; wrapped, never reseeded
    env._rng = recorder
    timesteps = [env.reset()]
    for action in actions:
        timesteps.append(env.step(int(action)))
        if timesteps[-1].last():
            break
    env._rng = recorder.rng
    length, width = env._chain_length, max(env._n_distractor, 1)
    need, start, *noise = recorder.scalars
    assert len(noise) == length - 1 and len(recorder.vectors) == length + 1  # one of each per step
    distractors = np.zeros((length + 1, width), bool)
    distractors[:, : env._n_distractor] = np.array(recorder.vectors, bool).reshape(length + 1, -1)
    problem = UmbrellaProblem(need_umbrella=np.bool_(need), start_umbrella=np.bool_(start),
                              noise_positive=np.array([*noise, 0], bool), distractors=distractors)
    return timesteps, problem


def compare(where, timestep, observation, reward, terminated, truncated, length):
    """What bsuite shows against what jaxcredit shows, at one step."""
    pixels = np.asarray(timestep.observation)[0]
    tokens = np.asarray(observation)
    assert pixels[0] == tokens[0] and pixels[1] == tokens[1], f"{where}: need/have {pixels[:2]} vs {tokens[:2]}"
    progress = length - (int(tokens[2]) - 2)
    assert pixels[2] == np.float32(1 - progress / length), f"{where}: time to live {pixels[2]} vs token {tokens[2]}"
    assert (pixels[3:] == tokens[3:]).all(), f"{where}: distractors {pixels[3:]} vs {tokens[3:]}"
    if timestep.first():
        return
    assert float(timestep.reward) == float(reward), f"{where}: reward {timestep.reward} vs {reward}"
    assert bool(timestep.last()) == bool(terminated) and not truncated, f"{where}: end of episode"
    assert float(timestep.discount) == (0.0 if terminated else 1.0), f"{where}: discount"


@pytest.mark.parametrize("chain_length, n_distractor, episodes", [(1, 0, 40), (2, 3, 60), (5, 0, 60), (20, 20, 80)])
def test_parity_with_bsuite_on_random_action_sequences(chain_length, n_distractor, episodes):
    bsuite_env = umbrella_chain.UmbrellaChain(chain_length=chain_length, n_distractor=n_distractor,
                                              seed=chain_length)
    env = make("umbrella", chain_length=chain_length, n_distractor=n_distractor)
    rng = np.random.default_rng(chain_length)
    actions = rng.integers(0, 2, size=(episodes, chain_length))
    played = [play_bsuite(bsuite_env, episode_actions) for episode_actions in actions]
    problems = jax.tree_util.tree_map(lambda *xs: jnp.asarray(np.stack(xs)), *[problem for _, problem in played])
    state = jax.jit(jax.vmap(env.init_problem))(problems)
    step = jax.jit(jax.vmap(env.step))
    states = [state]
    for t in range(chain_length):
        states.append(step(states[-1], jnp.asarray(actions[:, t], jnp.int32)))
    reference = make_reference(env)
    final_rewards = []
    for i, (timesteps, problem) in enumerate(played):
        assert len(timesteps) == chain_length + 1 and timesteps[-1].last()  # bsuite ends after exactly L steps
        ref = reference.reset(problem)
        for t, timestep in enumerate(timesteps):
            if t > 0:
                ref.step(int(actions[i, t - 1]))
            s = jax.tree_util.tree_map(lambda x, i=i: np.asarray(x)[i], states[t])
            where = f"L={chain_length} D={n_distractor} episode {i} step {t} (actions {actions[i, :t].tolist()})"
            compare(where, timestep, s.observation, s.reward, s.terminated, s.truncated, chain_length)
            compare(f"reference: {where}", timestep, ref.observation, ref.reward, ref.terminated, ref.truncated,
                    chain_length)
        final_rewards.append(float(timesteps[-1].reward))
    # bsuite's own regret count agrees with the final rewards' (2 per miss), and both outcomes occur
    assert bsuite_env.bsuite_info()["total_regret"] == sum(1 - r for r in final_rewards)
    assert set(final_rewards) == {-1.0, 1.0}


def test_optimal_return_and_sweeps_are_bsuite_s():
    assert umbrella_chain.UmbrellaChain(chain_length=3).optimal_return == 1  # V* at L = 1, tested in test_umbrella
    assert LENGTH_SWEEP == length_sweep.SETTINGS and NUM_EPISODES == length_sweep.NUM_EPISODES
    distract = load_distract(n_distractor=7)
    assert DISTRACT_SWEEP == tuple({"chain_length": distract._chain_length, **s} for s in distract_sweep.SETTINGS)
    assert distract._n_distractor == 7 and NUM_EPISODES == distract_sweep.NUM_EPISODES


def test_score_is_bsuite_s():
    """`bsuite_score` of each setting's average regret equals bsuite's `score_by_group` on the
    same logged totals (bsuite's analysis needs pandas and plotnine, which bsuite installs)."""
    pd = pytest.importorskip("pandas")
    analysis = pytest.importorskip("bsuite.experiments.umbrella_length.analysis")
    regrets = [0.0, 0.2, 0.49, 0.5, 0.8, 1.7]
    rows = [{"chain_length": i + 1, "episode": NUM_EPISODES, "total_regret": r * NUM_EPISODES}
            for i, r in enumerate(regrets)]
    rows += [{"chain_length": i + 1, "episode": 10, "total_regret": 0.0} for i in range(len(regrets))]
    assert bsuite_score(regrets) == analysis.score(pd.DataFrame(rows)) == 0.5
