"""CA-ID cards: what a credit claim measures, filled from the actual configuration.

A `CAIDCard` names, for one credit arm of a run or sweep, or for an audit: the **unit and
estimand** (what gets credit, and which quantity estimates it), the **effective state** (what the
credit conditions on), the **intervention provenance** (exact from the solver, continuations, or
learned), the **downstream protocol** (which policy plays after the intervention, for how long,
for which reward), **support and uncertainty** (continuations, seeds, intervals) and the
**optimization interface** (how the credit enters the loss). Rendered as Markdown and JSON.
Support and uncertainty names the interval method and the number of seeds, with a warning below
`jaxcredit.stats.MIN_RELIABLE_SEEDS`.
"""

from __future__ import annotations

import dataclasses
import os

from jaxcredit.arm_registry import CardText, options_of_config, options_to_dict
from jaxcredit.credit_arms import OBSERVED_STATE
from jaxcredit.overrides import apply_overrides
from jaxcredit.rundir_io import REGIME_BUDGET_COUNTERS, RENAMED_REGIMES, read_json, table_regimes
from jaxcredit.stats import INTERVAL_METHOD, interval_description

FIELDS = ("unit_and_estimand", "effective_state", "intervention_provenance", "downstream_protocol",
          "support_and_uncertainty", "optimization_interface")
TITLES = {"unit_and_estimand": "Unit and estimand", "effective_state": "Effective state",
          "intervention_provenance": "Intervention provenance", "downstream_protocol": "Downstream protocol",
          "support_and_uncertainty": "Support and uncertainty", "optimization_interface": "Optimization interface"}
@dataclasses.dataclass(frozen=True)
class CAIDCard:
    """One CA-ID card. `subject` names the claim (e.g. `sweep quick / arm mc`)."""

    subject: str
    unit_and_estimand: str
    effective_state: str
    intervention_provenance: str
    downstream_protocol: str
    support_and_uncertainty: str
    optimization_interface: str

    def to_dict(self) -> dict:
        """JSON-able dict of the fields."""
        return dataclasses.asdict(self)

    def to_markdown(self, level: int = 3) -> str:
        """A Markdown heading with the subject and one bullet per field."""
        lines = [f"{'#' * level} CA-ID card: {self.subject}", ""]
        lines += [f"- **{TITLES[name]}**: {getattr(self, name)}" for name in FIELDS]
        return "\n".join(lines) + "\n"


def _env_text(config: dict) -> str:
    overrides = config.get("env_overrides") or {}
    extra = ", ".join(f"{k}={v}" for k, v in sorted(dict(overrides).items()))
    return f"{config.get('env', 'mad')}" + (f" ({extra})" if extra else " (default configuration)")


def _credit_text(config: dict) -> CardText:
    """The card text of a training config's credit arm (the arm's own `card`, from its options,
    `jaxcredit.arm_registry`); the provenance ends with the ledger account the arm's work is
    charged to. A config of either spelling (`credit_options`, or an older version's flat fields)."""
    arm, options = options_of_config(config)  # raises ValueError naming the registered arms
    text = arm.card(options, config) if arm.card is not None else _default_text(arm, options)
    charged = f"its work is charged to the ledger's {arm.account} account" if arm.account else "no label work"
    return text._replace(provenance=f"{text.provenance}; {charged}")


def _default_text(arm, options) -> CardText:
    """What a card says of an arm without its own `card`: its description and options."""
    settings = ", ".join(f"{k}={v}" for k, v in options_to_dict(options).items())
    return CardText(f"per action: {arm.description}" + (f" ({settings})" if settings else ""),
                    "not stated by the arm", "not stated by the arm", "not stated by the arm")


def _interface(config: dict) -> str:
    clip = config.get("clip_epsilon", 0.0)
    epochs = config.get("ppo_epochs", 1)
    loss = (f"PPO-clipped (ε={clip}, {epochs} epoch(s))" if clip else "policy gradient (REINFORCE-style)")
    normalisation = config.get("loss_normalisation", "step")
    averaged = "over all live steps" if normalisation == "step" else "per episode, then over episodes"
    text = (f"the per-action advantage multiplies the action's log-probability in a {loss} loss, masked to live "
            f"steps and averaged {averaged}; entropy bonus {config.get('entropy_coef', 0.0)}, "
            f"Adam lr {config.get('learning_rate')}, gradient norm clip {config.get('max_grad_norm')}")
    return text + _credit_text(config).interface


def _regime_budget(regime: str, budgets: dict) -> str:
    if regime == "matched":
        return ("matched: the arms without label work get each label arm's total env steps at the end of its "
                "attempts run, seed by seed")
    if regime == "matched-policy-evals":
        return ("matched-policy-evals: the arms without label work get each label arm's total policy evaluations "
                "at the end of its attempts run, seed by seed")
    counter = REGIME_BUDGET_COUNTERS.get(RENAMED_REGIMES.get(regime, regime), "total_env_steps")
    unit = "main attempts" if counter == "main_episodes" else "total env steps"
    amount = budgets.get(regime)
    return f"{regime}: {amount:,} {unit}" if isinstance(amount, int) else f"{regime}: {unit}"


def card_for_config(config: dict, *, subject: str, regimes: dict | None = None,
                    regime_order: list | None = None) -> CAIDCard:
    """The card of one training configuration (a run's `config.json`, or a sweep's base + arm).

    `regimes` (`{regime: budget}`) describes a sweep's budgets, `regime_order` the regimes it ran
    (default: the keys of `regimes`); a run's own budget is used otherwise.
    """
    estimand, state, provenance, downstream, _ = _credit_text(config)
    seeds = config.get("num_seeds")
    if regimes is not None or regime_order:
        budget = "; ".join(_regime_budget(r, regimes or {}) for r in (regime_order or list(regimes)))
    else:
        budget = f"{config.get('budget', 0):,} {config.get('budget_counter', 'main_episodes')}"
    interval = (interval_description(seeds) if isinstance(seeds, int)
                else f"{INTERVAL_METHOD} intervals over the seeds")
    support = (f"{seeds} paired seed(s) (shared initial parameters and problem streams); {config.get('num_evals')} "
               f"evaluations on {config.get('eval_problems')} fixed problems, evenly spaced over each run's own "
               f"budget; paired differences with a {interval}; p-values from the paired t-test, Holm-adjusted "
               f"over the arms compared with one reference; budget {budget}")
    return CAIDCard(subject=subject, unit_and_estimand=f"unit: one action (step) in {_env_text(config)}; "
                    f"estimand: {estimand}", effective_state=state, intervention_provenance=provenance,
                    downstream_protocol=downstream, support_and_uncertainty=support,
                    optimization_interface=_interface(config))


def _run_config(path: str | None, arm: str, regimes: list) -> dict:
    """The arm's full config as one of its runs wrote it (`<path>/<regime>/<arm>/config.json`, first
    regime that has one), or `{}`: a sweep's spec holds only the fields it sets, not the defaults."""
    for regime in regimes if path else ():
        config_path = os.path.join(path, regime, arm, "config.json")
        if os.path.exists(config_path):
            return read_json(config_path)
    return {}


def cards_for_sweep(spec: dict, path: str | None = None) -> list[CAIDCard]:
    """One card per arm of a sweep (its `sweep_spec.json` as a dict). With the sweep directory
    `path`, each card reads its arm's full config from a run of that arm (every default included,
    e.g. the gradient clip), else from the spec's base and arm fields alone; a tuned sweep's arms
    at their chosen settings (`tuning.json`)."""
    cards = []
    arms = spec.get("arms", {})
    order = [arm for arm in spec.get("arm_order", []) if arm in arms] or list(arms)
    run_regimes = [r for r in (spec.get("regimes") or list(spec.get("budgets", {}))) if r != "matched"]
    tuning_path = None if path is None else os.path.join(path, "tuning.json")
    chosen = read_json(tuning_path)["arms"] if tuning_path and spec.get("tune") and os.path.exists(tuning_path) else {}
    for arm, fields in ((arm, arms[arm]) for arm in order):
        config = {**_run_config(path, arm, run_regimes), **spec.get("base", {}), **fields}
        config = apply_overrides(config, chosen.get(arm, {}).get("overrides", {}))  # a tuned arm's chosen setting
        if spec.get("num_seeds") is not None:
            config["num_seeds"] = spec["num_seeds"]
        cards.append(card_for_config(config, subject=f"sweep {spec.get('name', '?')} / arm {arm}",
                                     regimes=spec.get("budgets", {}),
                                     regime_order=table_regimes(spec.get("regimes") or list(spec.get("budgets", {})),
                                                                spec.get("match_on"))))
    return cards


def card_for_audit(audit: dict, *, policy: str) -> CAIDCard:
    """The card of an audit (the dict `run_audit` returns); `policy` describes the audited policy."""
    env = {"env": audit["env"], "env_overrides": audit.get("env_config", {})}
    n = audit["num_states"]
    provenance, support = [], [f"{n} states, one per episode of the policy's own play on fresh problems"]
    if "num_continuations" in audit:  # the forced mode
        k = audit["num_continuations"]
        provenance.append(f"continuation (K={k} per legal action, two independent halves of {k // 2})")
        support.append(f"forced: {audit['num_state_actions']} (state, action) pairs, split halves for sign agreement "
                       "and correlation, Monte Carlo error against exact values for k = "
                       + ", ".join(str(r["k"]) for r in audit["mc_error"]))
    if "sampled" in audit:
        sampled = audit["sampled"]
        provenance.append(f"completions sampled under the policy ({sampled['num_completions']} per state, "
                          f"halves of {sampled['halves'][0]} and {sampled['halves'][1]}; only the actions taken)")
        support.append(f"sampled: {sampled['total_completions']} completions, split halves for sign agreement "
                       "and correlation over the actions taken")
    return CAIDCard(
        subject=f"audit of {policy} on {audit['env']}",
        unit_and_estimand=f"unit: one legal action in a sampled state of {_env_text(env)}; estimand: "
                          "Q^π(s, a) − V^π(s) of the audited policy π (V̂ = Σ π Q̂; sampled: the mean return)",
        effective_state=OBSERVED_STATE,
        intervention_provenance="; ".join(provenance) + " compared with exact, solver over complete graph under "
                                "the same policy",
        downstream_protocol="the audited policy plays from the forced or sampled first action to the episode's end "
                            "(at most max_turns); reward: the environment's success reward",
        support_and_uncertainty="; ".join(support),
        optimization_interface="none: an audit measures labels and does not train",
    )


def checked_card_markdown(checked: dict, level: int = 3) -> str:
    """A checked card (`jaxcredit.suite.card_check`'s dict: `card`, `checks`, `policy`) as Markdown:
    each field with its check's status and result beside it."""
    card = CAIDCard(**checked["card"])
    lines = [f"{'#' * level} CA-ID card: {card.subject} (checked)", ""]
    for name in FIELDS:
        check = checked["checks"][name]
        status = check["status"]
        applies = status != "not applicable"
        detail = check["text"] if applies else check["text"].removeprefix("not applicable, ")
        mark = f"**{status}**" + (f": {detail}" if applies else f", {detail}")
        lines.append(f"- **{TITLES[name]}**: {getattr(card, name)}")
        lines.append(f"  - check: {mark}")
    if checked.get("policy"):
        lines += ["", f"Checked on {checked['policy']}."]
    return "\n".join(lines) + "\n"


def cards_markdown(cards: list[CAIDCard]) -> str:
    """All cards as one Markdown document."""
    return "\n".join(card.to_markdown() for card in cards)
