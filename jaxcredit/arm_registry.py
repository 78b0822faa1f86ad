"""The credit-arm contract and its open registry: what an arm is, its own options, and the lookup.

A credit arm is what a training run's `credit` names: a `CreditArm` with its name, the ledger
account its work is charged to, one `compute` function and its **options**, a frozen dataclass
of its own hyper-parameters (subclass `ArmOptions`, one `option(...)` per field), validated where
the arm is defined. `TrainConfig` carries the arm's name and an instance of its options
(`credit_options`), no field of any arm. The registry is open: `register_credit_arm(arm)` adds an
arm from any module (`jaxcredit.plugins`), and everything that lists arms reads it when it runs
(`credit_names()`, `label_free_credits()`, `credit_arm(name)`). The built-in arms register in
`jaxcredit.arms`. Configs that hold an arm's options as flat `TrainConfig` fields read through
each option's `legacy` field name (`split_options`). See docs/extending.md and
docs/training.md#credit-arm-options-credit_options.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import jax

from jaxcredit.ledger import ACCOUNTS
from jaxcredit.validation import INT32_MAX, require_float, require_int

OPTIONS_FIELD = "credit_options"  # TrainConfig's field; `credit_options.NAME` sets one option by name
_ARM_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # an arm's name is also a directory name in sweeps


class CreditContext(NamedTuple):
    """What every arm may read: the environment, the policy and its parameters, the run's config.

    `config` is the `TrainConfig` (or any object with the fields an arm reads, e.g.
    `attempts_per_problem`, and `credit_options`, the arm's options); `value_fn(params,
    observation, legal) -> [...]` is the critic head; `sharding` splits branch continuations over
    devices (None: one device); `prepared` is the arm's fixed state from its `prepare`.
    """

    env: Any
    policy_fn: Any
    params: Any
    config: Any
    value_fn: Any = None
    sharding: Any = None
    prepared: Any = None

    @property
    def options(self):
        """The arm's options (`config.credit_options`)."""
        return self.config.credit_options


class Preparation(NamedTuple):
    """An arm's one-time work before training.

    Attributes:
      state: the arm's fixed pytree of arrays (its `summary`, if any, a dict of float32 scalars the
        run directory records through the arm's `prepared_record`).
      charge: `{account: Counts}`, what the work cost, recorded once.
    """

    state: Any
    charge: dict


class LabelFit(NamedTuple):
    """An arm's learned value head fitted on a fixed policy's own episodes (its `fit_for_labels`).

    Attributes:
      value_params: the network parameters the value head is read from (a copy of the policy's,
        fitted; the policy itself keeps its own parameters).
      charge: `{account: Counts}`, what the fitting cost (its episodes under `main`, the arm's own
        label work under its account).
    """

    value_params: Any
    charge: dict

    def labelling_context(self, context: CreditContext) -> CreditContext:
        """`context` whose `value_fn` reads the fitted head (`value_params`) whatever parameters
        it is given: the policy (`policy_fn`, `params`) is unchanged."""
        value_fn, value_params = context.value_fn, self.value_params
        return context._replace(value_fn=lambda _params, observation, legal: value_fn(value_params, observation, legal))


class CreditResult(NamedTuple):
    """One arm's output for one iteration.

    Attributes:
      advantage: float32 `[B, T]`, 0 on non-live steps.
      critic_batch: `(observation [M, P], legal [M, A], target [M], valid [M])`, the value head's
        training batch for an arm that trains one (critic, progress-model; `P`: what the policy
        reads, `afterstate.policy_observations`), else None.
      charge: `{account: Counts}`, the work spent, per ledger account (empty: no work).
      action_values: float32 `[B, T, A]`, the exact value of every legal action at each step's
        state (`credit.solver_menu_values`; what the value-target objectives train on) for the arms
        that enumerate the graph (exact, solver), else None. It costs nothing beyond `charge`.
      critic_coef: the weight of the value head's squared error in the loss (with `critic_batch`).
      prepared: the arm's state for the next iteration (its `prepare`'s pytree, the same structure:
        an arm that remembers earlier batches), or None: the state stays as it is.
    """

    advantage: jax.Array
    critic_batch: Any
    charge: dict
    action_values: Any = None
    critic_coef: float = 1.0
    prepared: Any = None


class CardText(NamedTuple):
    """What a CA-ID card (`jaxcredit.analysis.card`) says about an arm, from its options and the
    run's config: the estimand, the effective state, the provenance of the intervention, the
    downstream protocol, and `interface`, text added to the optimisation interface (or "")."""

    estimand: str
    effective_state: str
    provenance: str
    downstream: str
    interface: str = ""


def option(default, *, choices: tuple | None = None, low=None, high=None, positive: bool = False,
           legacy: str | None = None, doc: str = ""):
    """One option of an arm (a dataclass field of an `ArmOptions` subclass), checked by its
    default's type: a bool must be a bool; an int an integer in `[low, high]`; a float a finite
    number in `[low, high]` (`positive`: `> 0`); a str one of `choices`. `legacy` names the flat
    `TrainConfig` field older versions kept it in; `doc` says what it does."""
    metadata = {"choices": choices, "low": low, "high": high, "positive": positive, "legacy": legacy, "doc": doc}
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class ArmOptions:
    """Base class of an arm's options: a frozen dataclass whose fields are `option(...)`s; every
    field is checked when an instance is made (`ValueError` naming the arm, the option and the
    allowed values). Set `arm` (a class variable) to the arm's name; a subclass's own
    `__post_init__` (calling this one first) adds checks across its fields."""

    arm: ClassVar[str] = "?"

    def __post_init__(self):
        for field in dataclasses.fields(self):
            _check_option(self.arm, field, getattr(self, field.name))


@dataclasses.dataclass(frozen=True)
class NoOptions(ArmOptions):
    """The options of an arm that has none."""


def _check_option(arm: str, field: dataclasses.Field, value) -> None:
    meta, default = field.metadata, field.default
    name = f"{OPTIONS_FIELD}.{field.name} of credit {arm!r}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
    elif isinstance(default, int):
        require_int(name, value, meta.get("low"), INT32_MAX if meta.get("high") is None else meta["high"])
    elif isinstance(default, float):
        number = require_float(name, value, meta.get("low"), meta.get("high"))
        if meta.get("positive") and number <= 0.0:
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    elif isinstance(default, str) and meta.get("choices") is not None:
        if not isinstance(value, str) or value not in meta["choices"]:
            raise ValueError(f"{name}: unknown value {value!r}; choices: {', '.join(meta['choices'])}")


@dataclasses.dataclass(frozen=True)
class CreditArm:
    """A registered arm.

    Attributes:
      name: what `TrainConfig.credit` and `--credit` name (lowercase letters, digits, `-`, `_`).
      account: the ledger account its work goes to (`jaxcredit.ledger.ACCOUNTS`); None: it spends none.
      enumerates: it enumerates each problem's graph (the environment must be small enough).
      description: one line.
      compute: `compute(context, trajectory, problems, key) -> CreditResult`.
      prepare: optional one-time work before training, `prepare(context, key, draw_problem,
        validation_problems) -> Preparation` (`validation_problems`: the run's held-out
        validation set, leaves `[V, ...]`, or None).
      options: the arm's `ArmOptions` subclass; `options()` are its defaults.
      check: optional `check(options, config)`, raising `ValueError` for a config the arm cannot
        train with (checked with the config, before anything runs).
      check_environment: optional `check_environment(options, env)`, the same once the
        environment is built (`make_train`).
      card: optional `card(options, config) -> CardText` for the CA-ID cards (`config` a dict of
        the run's fields); without it, a card states the description and the options.
      prepared_file: the file in the run directory that `prepared_record` fills (None: none).
      prepared_record: optional `prepared_record(options, summary, counters) -> dict`, the JSON of
        `prepared_file` from the prepared state's `summary` (numpy `[N]` per key) and each seed's
        ledger counters (a list of dicts).
        Reports and results pages show the file where analysis has a view of it
        (`jaxcredit.analysis.register_prepared_view`); without one, it is recorded but not shown.
      fit_for_labels: optional, for an arm with a learned part that training fits as it goes (a
        value head): `fit_for_labels(context, key, draw_episodes, *, steps) -> LabelFit`, that part
        fitted on the fixed policy `context.params`'s own fresh episodes (`draw_episodes(key) ->
        (problems [P], starts [B])`) for `steps` updates, before its labels are measured without
        training (the suite's label quality); `jaxcredit.value_fit.fit_value_head` fits the
        value head of an arm whose `compute` returns a critic batch.
    """

    name: str
    account: str | None
    enumerates: bool
    description: str
    compute: Callable[[CreditContext, Any, Any, jax.Array], CreditResult]
    prepare: Callable[..., Preparation] | None = None
    options: type = NoOptions
    check: Callable[[Any, Any], None] | None = None
    check_environment: Callable[[Any, Any], None] | None = None
    card: Callable[[Any, dict], CardText] | None = None
    prepared_file: str | None = None
    prepared_record: Callable[..., dict] | None = None
    fit_for_labels: Callable[..., LabelFit] | None = None

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self.options))

    @property
    def legacy_fields(self) -> dict:
        """`{old flat TrainConfig field: option name}` of this arm's options."""
        return {f.metadata["legacy"]: f.name for f in dataclasses.fields(self.options)
                if f.metadata.get("legacy")}


CREDIT_ARMS: dict[str, CreditArm] = {}  # the registry, in registration order (built-ins first)


def register_credit_arm(arm: CreditArm) -> CreditArm:
    """Add `arm` to the registry and return it; raises `ValueError` for a duplicate name or a
    malformed arm (a bad name or account, no `compute`, options that are not a frozen
    `ArmOptions` dataclass with a default for every field)."""
    if not isinstance(arm, CreditArm):
        raise ValueError(f"register_credit_arm takes a jaxcredit.CreditArm, got {type(arm).__name__}")
    if not isinstance(arm.name, str) or not _ARM_NAME.fullmatch(arm.name):
        raise ValueError(f"credit arm name {arm.name!r}: use 1-64 lowercase letters, digits, '-' or '_'")
    if arm.name in CREDIT_ARMS:
        raise ValueError(f"credit arm {arm.name!r} is already registered; registered: {', '.join(CREDIT_ARMS)}")
    if arm.account is not None and arm.account not in ACCOUNTS:
        raise ValueError(f"credit arm {arm.name!r}: account {arm.account!r} is not a ledger account; "
                         f"accounts: {', '.join(ACCOUNTS)} (or None)")
    for hook in ("compute", "prepare", "fit_for_labels", "check", "check_environment", "card", "prepared_record"):
        value = getattr(arm, hook)
        if (hook == "compute" or value is not None) and not callable(value):
            raise ValueError(f"credit arm {arm.name!r}: {hook} must be a function, got {value!r}")
    options = arm.options
    if (not isinstance(options, type) or not issubclass(options, ArmOptions) or not dataclasses.is_dataclass(options)
            or not options.__dataclass_params__.frozen):
        raise ValueError(f"credit arm {arm.name!r}: options must be a frozen dataclass subclassing "
                         f"jaxcredit.ArmOptions, got {options!r}")
    try:
        options()
    except TypeError as error:
        raise ValueError(f"credit arm {arm.name!r}: every option needs a default ({error})") from None
    CREDIT_ARMS[arm.name] = arm
    return arm


def credit_names() -> tuple[str, ...]:
    """The registered arms' names, in registration order (the built-ins first)."""
    return tuple(CREDIT_ARMS)


def label_free_credits() -> tuple[str, ...]:
    """The registered arms that spend no label, critic or predictor work (account None)."""
    return tuple(name for name, arm in CREDIT_ARMS.items() if arm.account is None)


def credit_arm(name: str) -> CreditArm:
    """The arm called `name`; raises `ValueError` listing the registered arms."""
    if not isinstance(name, str) or name not in CREDIT_ARMS:
        raise ValueError(f"unknown credit arm {name!r}; choices: {', '.join(CREDIT_ARMS)} (an arm of a plugin "
                         "needs --plugin)")
    return CREDIT_ARMS[name]


def legacy_field_names() -> set:
    """Every registered arm's old flat field names (what older `config.json` files hold)."""
    return {field for arm in CREDIT_ARMS.values() for field in arm.legacy_fields}


def options_from_dict(arm: CreditArm, values: dict, *, base: ArmOptions | None = None) -> ArmOptions:
    """`base` (default: the arm's defaults) with `values` (`{option: value}`; JSON lists become
    tuples); raises `ValueError` naming an unknown option with the arm's options, or a bad value."""
    if not isinstance(values, dict):
        raise ValueError(f"{OPTIONS_FIELD} must be a JSON object of credit {arm.name!r}'s options, got {values!r}")
    unknown = sorted(set(values) - set(arm.option_names))
    if unknown:
        choices = ", ".join(arm.option_names) or "none"
        raise ValueError(f"credit {arm.name!r} has no option(s) {unknown}; its options: {choices}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return dataclasses.replace(base if base is not None else arm.options(), **values)


def options_to_dict(options: ArmOptions) -> dict:
    """An arm's options as a JSON-ready dict (tuples as lists)."""
    return {f.name: list(v) if isinstance(v := getattr(options, f.name), tuple) else v
            for f in dataclasses.fields(options)}


def split_options(values: dict, credit: str, base: ArmOptions | None = None) -> tuple[ArmOptions, dict]:
    """`(options, other fields)` of a config dict naming arm `credit`.

    The options are `base` (when it is `credit`'s, else the arm's defaults), then the
    `credit_options` object (an `ArmOptions` instance or a dict of some options), then old flat
    fields of this arm (other arms' old fields are dropped), then `credit_options.NAME` entries,
    each later one overriding. Raises `ValueError` naming an unknown option.
    """
    arm = credit_arm(credit)
    rest, dotted, legacy = {}, {}, {}
    nested = None
    legacy_names, own = legacy_field_names(), arm.legacy_fields
    for key, value in values.items():
        if key == OPTIONS_FIELD:
            nested = value
        elif isinstance(key, str) and key.startswith(OPTIONS_FIELD + "."):
            dotted[key[len(OPTIONS_FIELD) + 1:]] = value
        elif key in own:
            legacy[own[key]] = value
        elif key not in legacy_names:
            rest[key] = value
    options = base if isinstance(base, arm.options) else arm.options()
    if isinstance(nested, ArmOptions):
        if not isinstance(nested, arm.options):
            raise ValueError(f"{OPTIONS_FIELD} are {type(nested).__name__}, not the options of credit {credit!r} "
                             f"({arm.options.__name__})")
        options = nested
    elif nested is not None:
        options = options_from_dict(arm, nested, base=options)
    if legacy or dotted:
        options = options_from_dict(arm, {**legacy, **dotted}, base=options)
    return options, rest


def dotted_options(values: dict, credit: str) -> dict:
    """`values` (config fields naming arm `credit`) with its options spelled `credit_options.NAME`,
    however they were given (an object, older flat fields; other arms' flat fields dropped): one
    spelling, so two records of the same settings compare equal."""
    arm = credit_arm(credit)
    legacy_names, own = legacy_field_names(), arm.legacy_fields
    out = {}
    for key, value in values.items():
        if key == OPTIONS_FIELD and isinstance(value, dict):
            out.update({f"{OPTIONS_FIELD}.{k}": v for k, v in value.items()})
        elif key in own:
            out[f"{OPTIONS_FIELD}.{own[key]}"] = value
        elif key not in legacy_names:
            out[key] = value
    return out


def options_of_config(config: dict) -> tuple[CreditArm, ArmOptions]:
    """`(arm, options)` of a config dict as a run or a sweep record wrote it (either spelling)."""
    credit = config.get("credit", "outcome")
    return credit_arm(credit), split_options(config, credit)[0]
