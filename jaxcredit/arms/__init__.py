"""The built-in credit arms, one module each: its options (a frozen dataclass validated there), its
`compute`, its card and its registration (`jaxcredit.register_credit_arm`), the shape of a plugin
arm (`docs/extending.md`). What several arms share is in `shared`.

Importing this package registers them, in this order: `outcome`, `mc`, `exact`, `solver`,
`anchor`, `critic`, `predictor`, `progress-soft` and `progress-hard` (both in `progress`),
`progress-model`, `text-matched`. The contract and the registry are `jaxcredit.arm_registry`; what each arm
computes and charges: `docs/training.md` (Credit estimators).
"""

# isort: off
# Each module registers its arm when it is imported: this line's order is the registry's.
from jaxcredit.arms import outcome, mc, exact, solver, anchor, critic, predictor, progress, progress_model, text_matched
# isort: on
from jaxcredit.arms.anchor import AnchorOptions, anchor_arm
from jaxcredit.arms.critic import CriticOptions, critic_arm, critic_labels
from jaxcredit.arms.exact import ExactOptions, exact_arm
from jaxcredit.arms.mc import MC_VARIANTS, McOptions, mc_arm, mc_q_arm, mc_td_arm
from jaxcredit.arms.outcome import OutcomeOptions, outcome_arm
from jaxcredit.arms.predictor import PredictorOptions, predictor_arm, predictor_network, predictor_prepare
from jaxcredit.arms.progress import ProgressHardOptions, ProgressSoftOptions, progress_hard_arm, progress_soft_arm
from jaxcredit.arms.progress_model import ProgressModelOptions, progress_model_arm
from jaxcredit.arms.shared import (
    MAX_ENUMERATED,
    OBSERVED_STATE,
    OUTCOME_BASELINES,
    check_replacement_option,
    critic_values,
    q_advantage,
)
from jaxcredit.arms.solver import SOLVER_POLICIES, SolverOptions, solver_arm
from jaxcredit.arms.text_matched import TextMatchedOptions, text_matched_arm

BUILT_IN_MODULES = (outcome, mc, exact, solver, anchor, critic, predictor, progress, progress_model, text_matched)

__all__ = ["BUILT_IN_MODULES", "MAX_ENUMERATED", "MC_VARIANTS", "OBSERVED_STATE", "OUTCOME_BASELINES",
           "SOLVER_POLICIES", "AnchorOptions", "CriticOptions", "ExactOptions", "McOptions", "OutcomeOptions",
           "PredictorOptions", "ProgressHardOptions", "ProgressModelOptions", "ProgressSoftOptions", "SolverOptions",
           "TextMatchedOptions", "text_matched_arm",
           "anchor_arm", "check_replacement_option", "critic_arm", "critic_labels", "critic_values", "exact_arm",
           "mc_arm", "mc_q_arm", "mc_td_arm", "outcome_arm", "predictor_arm", "predictor_network",
           "predictor_prepare", "progress_hard_arm", "progress_model_arm", "progress_soft_arm", "q_advantage",
           "solver_arm"]
