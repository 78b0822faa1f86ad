"""The built-in arms are one module each under `jaxcredit.arms`, registered in the registry's
order, and the older import path `jaxcredit.credit_arms` still gives every name it gave; a
prepared record is rendered by analysis (`PREPARED_VIEWS`), never by the arm. No training.
"""

import dataclasses
import importlib
from pathlib import Path

import pytest

import jaxcredit
import jaxcredit.arms
from jaxcredit import credit_arms
from jaxcredit.analysis.prepared import PREPARED_VIEWS, prepared_sections, register_prepared_view
from jaxcredit.arm_registry import CREDIT_ARMS, CreditArm, NoOptions

# arm -> its module under jaxcredit.arms (the two Math-Shepherd kinds are one factory, one module)
MODULES = {"outcome": "outcome", "mc": "mc", "exact": "exact", "solver": "solver", "anchor": "anchor",
           "critic": "critic", "predictor": "predictor", "progress-soft": "progress", "progress-hard": "progress",
           "progress-model": "progress_model", "text-matched": "text_matched"}
# what `from jaxcredit.credit_arms import ...` gave before the arms had their own modules
OLD_NAMES = ["CREDIT_ARMS", "MAX_ENUMERATED", "OBSERVED_STATE", "AnchorOptions", "ArmOptions", "CardText", "CreditArm",
             "CreditContext", "CreditResult", "CriticOptions", "LabelFit", "ExactOptions", "McOptions", "NoOptions",
             "OutcomeOptions", "Preparation", "PredictorOptions", "ProgressHardOptions", "ProgressModelOptions",
             "ProgressSoftOptions", "SolverOptions", "check_replacement_option", "credit_arm", "credit_names",
             "label_free_credits", "option", "register_credit_arm", "MC_VARIANTS", "OUTCOME_BASELINES",
             "SOLVER_POLICIES", "anchor_arm", "critic_arm", "critic_labels", "critic_values", "exact_arm", "mc_arm",
             "mc_q_arm", "mc_td_arm", "outcome_arm", "predictor_arm", "predictor_network", "predictor_prepare",
             "progress_hard_arm", "progress_model_arm", "progress_soft_arm", "q_advantage", "solver_arm"]


def test_the_built_in_arms_register_in_the_registry_order():
    assert jaxcredit.credit_names()[:len(MODULES)] == tuple(MODULES)


@pytest.mark.parametrize("name", list(MODULES))
def test_each_built_in_arm_is_defined_in_its_own_module(name):
    arm = CREDIT_ARMS[name]
    module = f"jaxcredit.arms.{MODULES[name]}"
    assert Path(importlib.import_module(module).__file__).parent == Path(jaxcredit.arms.__file__).parent
    hooks = [arm.compute, arm.card, arm.check, arm.check_environment, arm.prepare, arm.prepared_record]
    own = [hook for hook in hooks if hook is not None and not hook.__module__.startswith("jaxcredit.arms.shared")]
    assert own and {hook.__module__ for hook in own} == {module}
    assert arm.options is NoOptions or arm.options.__module__ == module
    assert arm.options.arm == name


def test_no_two_arms_share_a_module_but_the_two_progress_kinds():
    by_module: dict = {}
    for name, module in MODULES.items():
        by_module.setdefault(module, []).append(name)
    assert {module: names for module, names in by_module.items() if len(names) > 1} == {
        "progress": ["progress-soft", "progress-hard"]}
    files = {p.stem for p in Path(jaxcredit.arms.__file__).parent.glob("*.py")}
    assert files == set(MODULES.values()) | {"__init__", "shared"}


def test_every_arm_module_opens_with_a_short_docstring():
    for module in jaxcredit.arms.BUILT_IN_MODULES + (importlib.import_module("jaxcredit.arms.shared"), jaxcredit.arms):
        words = len((module.__doc__ or "").split())
        assert 10 <= words <= 150, (module.__name__, words)


def test_the_old_import_path_gives_every_old_name_as_the_same_object():
    missing = [name for name in OLD_NAMES if not hasattr(credit_arms, name)]
    assert not missing
    assert set(OLD_NAMES) <= set(credit_arms.__all__)
    assert credit_arms.CREDIT_ARMS is jaxcredit.CREDIT_ARMS
    assert credit_arms.register_credit_arm is jaxcredit.register_credit_arm
    assert credit_arms.McOptions is importlib.import_module("jaxcredit.arms.mc").McOptions
    assert credit_arms.predictor_prepare is CREDIT_ARMS["predictor"].prepare
    assert credit_arms.progress_soft_arm is CREDIT_ARMS["progress-soft"].compute
    assert credit_arms.MAX_ENUMERATED == 4_000_000


def test_arms_hold_their_prepared_record_as_data_and_analysis_renders_it(tmp_path, monkeypatch):
    assert not {"prepared_title", "prepared_markdown"} & {f.name for f in dataclasses.fields(CreditArm)}
    arm = CREDIT_ARMS["predictor"]
    assert PREPARED_VIEWS[arm.prepared_file].title == "Predictor label accuracy"
    # a plugin arm's own file and view: one section, titled by the view, rendered from the file's JSON
    toy = CreditArm("toy-prepared", None, False, "a toy", CREDIT_ARMS["outcome"].compute, prepared_file="toy.json")
    monkeypatch.setitem(CREDIT_ARMS, toy.name, toy)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"credit": "toy-prepared"}')
    (run / "toy.json").write_text('{"size": 7}')
    assert prepared_sections({"run toy": str(run)}) == []  # no view: recorded, not shown
    try:
        register_prepared_view("toy.json", title="Toy record", markdown=lambda record: f"size {record['size']}\n")
        assert prepared_sections({"run toy": str(run)}) == ["## Toy record", "", "### run toy", "", "size 7\n"]
        with pytest.raises(ValueError, match="already has a view"):
            register_prepared_view("toy.json", title="again", markdown=str)
        with pytest.raises(ValueError, match="must be a function"):
            register_prepared_view("other.json", title="bad", markdown="not a function")
    finally:
        PREPARED_VIEWS.pop("toy.json", None)
    assert "other.json" not in PREPARED_VIEWS
