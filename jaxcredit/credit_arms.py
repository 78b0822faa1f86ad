"""The built-in credit arms under a second import path: each arm lives in its own module of
`jaxcredit.arms` (its options, `compute`, card and registration), the contract and the registry in
`jaxcredit.arm_registry`. This module re-exports both, so `from jaxcredit.credit_arms import
CREDIT_ARMS, McOptions, credit_arm` keeps working. The arms: `docs/training.md` (Credit estimators).
"""

from jaxcredit.arm_registry import (
    CREDIT_ARMS,
    ArmOptions,
    CardText,
    CreditArm,
    CreditContext,
    CreditResult,
    LabelFit,
    NoOptions,
    Preparation,
    credit_arm,
    credit_names,
    label_free_credits,
    option,
    register_credit_arm,
)
from jaxcredit.arms import (
    MAX_ENUMERATED,
    MC_VARIANTS,
    OBSERVED_STATE,
    OUTCOME_BASELINES,
    SOLVER_POLICIES,
    AnchorOptions,
    CriticOptions,
    ExactOptions,
    McOptions,
    OutcomeOptions,
    PredictorOptions,
    ProgressHardOptions,
    ProgressModelOptions,
    ProgressSoftOptions,
    SolverOptions,
    anchor_arm,
    check_replacement_option,
    critic_arm,
    critic_labels,
    critic_values,
    exact_arm,
    mc_arm,
    mc_q_arm,
    mc_td_arm,
    outcome_arm,
    predictor_arm,
    predictor_network,
    predictor_prepare,
    progress_hard_arm,
    progress_model_arm,
    progress_soft_arm,
    q_advantage,
    solver_arm,
)

__all__ = ["CREDIT_ARMS", "MAX_ENUMERATED", "OBSERVED_STATE", "AnchorOptions", "ArmOptions", "CardText", "CreditArm",
           "CreditContext", "CreditResult", "CriticOptions", "LabelFit", "ExactOptions", "McOptions", "NoOptions",
           "OutcomeOptions", "Preparation", "PredictorOptions", "ProgressHardOptions", "ProgressModelOptions",
           "ProgressSoftOptions", "SolverOptions", "check_replacement_option", "credit_arm", "credit_names",
           "label_free_credits", "option", "register_credit_arm",
           # the arms' functions and the options' choices, importable from here as before
           "MC_VARIANTS", "OUTCOME_BASELINES", "SOLVER_POLICIES", "anchor_arm", "critic_arm", "critic_labels",
           "critic_values", "exact_arm", "mc_arm", "mc_q_arm", "mc_td_arm", "outcome_arm", "predictor_arm",
           "predictor_network", "predictor_prepare", "progress_hard_arm", "progress_model_arm", "progress_soft_arm",
           "q_advantage", "solver_arm"]
