"""Counterfactual credit under each replacement and Math-Shepherd progress labels, hand-computed.

The episode: MAD with 2 cells (cell 0 holds a token, cell 1 is blank), one decorative action and 6
turns. The agent takes `note 0` (decorative), `select 1` (harmful: a blank), `select 0`
(load-bearing), `unselect 1` (the repair) and `submit` (success). The policy π takes, at every
state, the shortest-path action or the note with probability 1/2 each, so from a state that needs
n more steps with m turns left it succeeds with probability `B(m, n) = P(Binomial(m, 1/2) >= n)`:
every value below is a fraction by hand (in 64ths, or 4096ths for the hard label with N = 2).
"""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxcredit.arm_registry import split_options
from jaxcredit.credit import check_replacement, progress_advantage, replacement_value
from jaxcredit.credit_arms import CREDIT_ARMS, CreditContext, ExactOptions, McOptions, check_replacement_option
from jaxcredit.envs import BLANK, make
from jaxcredit.rollout import replay
from jaxcredit.train import TrainConfig, config_from_dict, make_train
from tests.conftest import TINY_MAD, TINY_TRAIN

ENV = make("mad", length=2, num_tokens=1, min_useful=1, max_useful=1, decorative_actions=1, max_turns=6)
TAPE = jnp.asarray([0, BLANK], jnp.int32)
NOTE, SUBMIT = 5, 4
EPISODE = [NOTE, 1, 0, 3, SUBMIT, 0]  # the last entry is padding after the end
# Q of every action at each step, by hand: B(m, n) with m the turns left after the action and n the
# steps then needed (empty 2, {1} 3, {0} 1, {0, 1} 2); a wrong submit and a note keep the position.
#             select 0  select 1  unselect 0  unselect 1  submit   note
Q_HAND = np.array([
    [31 / 32, 16 / 32, np.nan, np.nan, 26 / 32, 26 / 32],   # t0: empty, 6 turns left
    [15 / 16, 5 / 16, np.nan, np.nan, 11 / 16, 11 / 16],    # t1: empty, 5 left
    [4 / 8, np.nan, np.nan, 4 / 8, 1 / 8, 1 / 8],            # t2: {1}, 4 left
    [np.nan, np.nan, 0.0, 3 / 4, 1 / 4, 1 / 4],              # t3: {0, 1}, 3 left
    [np.nan, 0.0, 0.0, np.nan, 1.0, 1 / 2],                  # t4: {0}, 2 left
])
PHI = np.array([57, 52, 20, 32, 48, 64]) / 64  # V^π before each step, then the success
HAND = {  # the five live steps' labels
    "on-policy": np.array([-5, -32, 12, 16, 16]) / 64,
    "uniform": np.array([5 / 128, -22 / 64, 12 / 64, 28 / 64, 40 / 64]),
    "null": np.array([0, -24, 24, 32, 32]) / 64,
}
HARD_N = 2
HARD = np.diff(1 - (1 - PHI) ** HARD_N)  # E[Φ_hard] = 1 - (1 - p)^N; the success is 1 either way
OPTIMAL = {"on-policy": np.zeros(5), "uniform": np.array([0, 0, 0, 1 / 4, 1 / 2]), "null": np.zeros(5)}


def half_note_policy(params, observation, legal_action_mask):
    """π: the shortest-path action (unselect the selected blank, else select the token, else submit)
    or `note 0`, with probability 1/2 each (every other action gets exactly 0 in float32)."""
    cells = observation[..., :2]
    blank_selected, token_unselected = cells[..., 1] == 1, cells[..., 0] == 2
    greedy = jnp.where(blank_selected, 3, jnp.where(token_unselected, 0, SUBMIT))
    actions = jnp.arange(legal_action_mask.shape[-1])
    chosen = (actions == greedy[..., None]) | (actions == NOTE)
    return jnp.where(chosen, 0.0, -1e4)


def _check_hand_tables():
    """The hand tables agree with each other: V^π is π's mix of the Q's, the labels follow from Q."""
    greedy = [0, 0, 3, 3, SUBMIT]
    taken = [NOTE, 1, 0, 3, SUBMIT]
    for t in range(5):
        q = Q_HAND[t]
        assert PHI[t] == pytest.approx((q[greedy[t]] + q[NOTE]) / 2)
        assert HAND["on-policy"][t] == pytest.approx(q[taken[t]] - PHI[t])
        assert HAND["uniform"][t] == pytest.approx(q[taken[t]] - np.nanmean(q))
        assert HAND["null"][t] == pytest.approx(q[taken[t]] - q[NOTE])


def _episodes(copies):
    starts = jax.vmap(ENV.init_problem)(jnp.broadcast_to(TAPE, (copies, 2)))
    trajectory, _ = replay(ENV, starts, jnp.broadcast_to(jnp.asarray(EPISODE, jnp.int32), (copies, 6)))
    return trajectory


def _config(credit, *, attempts_per_problem=1, **options):
    """What an arm reads of a run's config: the shared fields and the arm's options (`credit_options`)."""
    base = dict(replacement="on-policy", variant="q", continuations=HARD_N if credit.startswith("progress") else 4,
                policy="optimal")
    own = {k: v for k, v in {**base, **options}.items() if k in CREDIT_ARMS[credit].option_names}
    return types.SimpleNamespace(attempts_per_problem=attempts_per_problem, objective="pg",
                                 credit_options=split_options({"credit_options": own}, credit)[0])


def _run(name, copies, key=0, **options):
    trajectory = _episodes(copies)
    context = CreditContext(ENV, half_note_policy, None, _config(name, attempts_per_problem=copies, **options))
    compute = jax.jit(lambda t, p, k: CREDIT_ARMS[name].compute(context, t, p, k))
    result = compute(trajectory, TAPE[None], jax.random.key(key))
    return trajectory, result


def test_the_episode_and_the_hand_tables():
    _check_hand_tables()
    trajectory = _episodes(1)
    assert trajectory.live[0].tolist() == [True] * 5 + [False]
    assert trajectory.episode_return.tolist() == [1.0] and trajectory.turns_left[0, :5].tolist() == [6, 5, 4, 3, 2]
    assert trajectory.position[0, :5].tolist() == [0, 0, 0b10, 0b11, 0b01]
    # the ranking each label gives: decorative, harmful, load-bearing, repair, submit
    assert np.argsort(HAND["on-policy"][:4]).tolist() == [1, 0, 2, 3]  # the repair above the load-bearing step
    assert HARD[2] > HARD[3] and HARD[0] > HAND["on-policy"][0]


@pytest.mark.parametrize("replacement", ["on-policy", "uniform", "null"])
def test_exact_credit_under_each_replacement_is_the_hand_value(replacement):
    _, result = _run("exact", 1, replacement=replacement)
    np.testing.assert_allclose(result.advantage[0, :5], HAND[replacement], atol=1e-6)
    assert float(result.advantage[0, 5]) == 0.0
    # 4 positions reached, 4 legal moves each (2 cell actions, submit, note); 4 distinct observations
    label = result.charge["label"]
    assert (int(label.env_steps), int(label.policy_evals), int(label.episodes)) == (16, 4, 0)
    np.testing.assert_allclose(np.where(np.isnan(Q_HAND), 0.0, Q_HAND), result.action_values[0, :5], atol=1e-6)


@pytest.mark.parametrize("replacement", ["on-policy", "uniform", "null"])
def test_solver_credit_under_each_replacement_is_the_hand_value(replacement):
    """Under the optimal μ the turns are plentiful until the last two steps; the note at the start
    costs nothing (the slack), so its label is 0 under every replacement."""
    _, result = _run("solver", 1, replacement=replacement)
    np.testing.assert_allclose(result.advantage[0, :5], OPTIMAL[replacement], atol=1e-6)


def _mean_and_error(advantage):
    advantage = np.asarray(advantage)[:, :5]
    return advantage.mean(0), advantage.std(0, ddof=1) / np.sqrt(advantage.shape[0])


@pytest.mark.parametrize("variant,replacement", [("q", "on-policy"), ("q", "uniform"), ("q", "null"),
                                                 ("td", "on-policy"), ("td", "null")])
def test_monte_carlo_credit_under_each_replacement_averages_to_the_hand_value(variant, replacement):
    copies, k = 128, 16
    trajectory, result = _run("mc", copies, key=3, variant=variant, replacement=replacement, continuations=k)
    mean, error = _mean_and_error(result.advantage)
    assert (error[1:] > 0).all()  # Monte Carlo noise; the note under null compares the same estimate with itself
    np.testing.assert_array_less(np.abs(mean - HAND[replacement]), 5 * error + 1e-6)
    counts = result.charge["label"]
    if variant == "td":
        # V̂ of the 5 live states (the final state has ended) and, for null, Q̂(s, note) of the same 5
        runs = 5 * k * copies * (2 if replacement == "null" else 1)
        assert int(counts.episodes) == runs
        null_steps = 5 * copies if replacement == "null" else 0  # the forced note: a step, no policy evaluation
        assert int(counts.env_steps) - int(counts.policy_evals) == null_steps
    else:
        assert int(counts.episodes) == 4 * 5 * k * copies  # 4 legal actions at each live state


@pytest.mark.parametrize("kind", ["soft", "hard"])
def test_progress_labels_average_to_the_hand_value(kind):
    copies = 2048
    _, result = _run(f"progress-{kind}", copies, key=5)
    mean, error = _mean_and_error(result.advantage)
    want = HAND["on-policy"] if kind == "soft" else HARD
    np.testing.assert_array_less(np.abs(mean - want), 5 * error + 1e-6)
    other = HARD if kind == "soft" else HAND["on-policy"]
    assert np.abs(mean - other).max() > 10 * error.max()  # the two labels are told apart
    counts = result.charge["label"]
    assert int(counts.episodes) == 5 * HARD_N * copies and int(counts.env_steps) == int(counts.policy_evals)
    assert int(counts.env_steps) >= int(counts.episodes)


def test_progress_label_of_given_progress_is_its_difference():
    trajectory = _episodes(1)
    phi = jnp.asarray([[0.5, 0.25, 0.75, 0.5, 0.5, 0.9, 0.3]])  # the entries after the end are ignored
    np.testing.assert_allclose(progress_advantage(trajectory, progress=phi)[0], [-0.25, 0.5, -0.25, 0, 0.5, 0])


def test_learned_progress_model_labels_and_its_training_batch():
    """`progress-model` with a given value head Φ_θ: the labels are its differences along the episode,
    and its training batch is every step with the episode's outcome as target, valid where live."""
    def value_fn(params, observation, legal_action_mask):  # token cell 0 selected: 3; blank cell 1 selected: 1
        return 0.5 * (observation[..., 0] == 3) + 0.25 * (observation[..., 1] == 1) + 0.125

    trajectory = _episodes(1)
    context = CreditContext(ENV, half_note_policy, None, _config("progress-model"), value_fn=value_fn)
    result = CREDIT_ARMS["progress-model"].compute(context, trajectory, TAPE[None], jax.random.key(0))
    # Φ_θ: empty 1/8, {1} 3/8, {0, 1} 7/8, {0} 5/8; the submit's step earns 1 and ends the episode
    np.testing.assert_allclose(result.advantage[0], [0.0, 0.25, 0.5, -0.25, 0.375, 0.0])
    observation, legal, target, valid = result.critic_batch
    assert observation.shape == (6, 3) and legal.shape == (6, 6) and result.charge == {}
    assert target.tolist() == [1.0] * 5 + [0.0] and valid.tolist() == [True] * 5 + [False]
    assert CREDIT_ARMS["progress-model"].account is None


def test_replacement_value_by_hand():
    trajectory = _episodes(1)
    q = jnp.asarray(np.where(np.isnan(Q_HAND), 7.0, Q_HAND))[None]  # illegal entries are never read
    q = jnp.concatenate([q, jnp.full((1, 1, 6), 7.0)], axis=1)
    on_policy = jnp.asarray([PHI[:5].tolist() + [0.3]])
    np.testing.assert_allclose(replacement_value(trajectory, q, replacement="uniform", on_policy_value=on_policy)[0],
                               list(np.nanmean(Q_HAND, axis=1)) + [0.0], atol=1e-6)
    np.testing.assert_allclose(replacement_value(trajectory, q, replacement="null", on_policy_value=on_policy,
                                                 null_action=NOTE)[0], list(Q_HAND[:, NOTE]) + [0.0], atol=1e-6)
    np.testing.assert_allclose(replacement_value(trajectory, q, replacement="on-policy",
                                                 on_policy_value=on_policy)[0], list(PHI[:5]) + [0.0], atol=1e-6)


def test_bad_replacements_are_refused_clearly():
    plain = make("mad")
    with pytest.raises(ValueError, match="unknown replacement 'resample'; choices: on-policy, uniform, null"):
        check_replacement("resample")
    with pytest.raises(ValueError, match="needs an environment with a null .* 'arithmetic'"):
        check_replacement("null", make("arithmetic"))
    with pytest.raises(ValueError, match="'mad' as configured has none .*decorative_actions"):
        check_replacement_option(ExactOptions(replacement="null"), None, plain)
    with pytest.raises(ValueError, match=r"credit 'outcome' has no option\(s\) \['replacement'\]"):
        TrainConfig(credit="outcome", credit_options={"replacement": "uniform"})
    with pytest.raises(ValueError, match="set credit_options.variant 'q'"):
        check_replacement_option(McOptions(variant="td", replacement="uniform"), None, ENV)
    with pytest.raises(ValueError, match="objective 'dense' does not use"):
        check_replacement_option(ExactOptions(replacement="uniform"), types.SimpleNamespace(objective="dense"), ENV)
    with pytest.raises(ValueError, match="credit_options.replacement of credit 'exact': replacement 'null' needs"):
        TrainConfig(credit="exact", credit_options={"replacement": "null"})
    with pytest.raises(ValueError, match="credit_options.replacement of credit 'exact': unknown value 'any'"):
        TrainConfig(credit="exact", credit_options={"replacement": "any"})
    with pytest.raises(ValueError, match="credit_options.continuations of credit 'progress-soft'"):
        TrainConfig(credit="progress-soft", credit_options={"continuations": 0})
    config = TrainConfig(credit="exact", credit_options={"replacement": "null"},
                         env_overrides={"decorative_actions": 1})
    assert config.credit_options.replacement == "null" and TrainConfig(credit="exact").credit_options.replacement == (
        "on-policy")
    from_json = config_from_dict({"credit": "mc", "credit_options.replacement": None,
                                  "env_overrides": {"decorative_actions": 1}})
    assert from_json.credit_options.replacement == "null"  # `--set credit_options.replacement=null` is JSON null
    old = config_from_dict({"credit": "solver", "replacement": "uniform", "progress_continuations": 3})
    assert old.credit_options.replacement == "uniform"  # an older config's flat field reads into the options
    with pytest.raises(ValueError, match="needs the environment's null_action"):
        replacement_value(_episodes(1), jnp.zeros((1, 6, 6)), replacement="null", on_policy_value=jnp.zeros((1, 6)))


def test_the_trainer_fits_the_progress_model_on_its_own_episodes():
    """One iteration of `progress-model` on decorated tiny MAD: nothing charged beyond the main attempts,
    and the value head (zero at the start) is trained: the critic batch reaches the loss."""
    fields = {"credit": "progress-model", "env_overrides": {**TINY_MAD, "decorative_actions": 1, "max_turns": 6}}
    trainer = make_train(config_from_dict({**TINY_TRAIN, **fields}))
    state = trainer.init(jnp.int32(0))
    after = jax.jit(trainer.iterate)(state)
    ledger = after.ledger
    assert int(ledger.main_episodes) == 32 and int(ledger.label_env_steps) == int(ledger.critic_env_steps) == 0
    observation = jax.vmap(trainer.env.init)(jax.random.split(jax.random.key(1), 8))
    before = trainer.value_fn(state.params, observation.observation, observation.legal_action_mask)
    moved = trainer.value_fn(after.params, observation.observation, observation.legal_action_mask)
    assert float(jnp.abs(before).max()) == 0.0 and float(jnp.abs(moved).max()) > 0.0
