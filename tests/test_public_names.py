"""Names that explain themselves: every TrainConfig field documented, environments' static
configuration (`Environment.config()`), the policy's named functions, the CLI's declared choices,
and renamed names and preset arms."""

import dataclasses
import json
import os
import re
import types

import pytest

import jaxcredit
import jaxcredit.analysis
import jaxcredit.envs
from jaxcredit.cli import main
from jaxcredit.envs import ENVIRONMENTS, make, make_reference
from jaxcredit.policy import PolicyConfig, PolicyFunctions, make_policy, make_policy_from_sizes, task_sizes
from jaxcredit.train import PRESETS, TrainConfig, run_sweep


def test_every_train_config_field_is_documented_in_order():
    documented = re.findall(r"^      (\w+)(?:, \w+)*: \S", TrainConfig.__doc__, re.MULTILINE)
    assert documented == [field.name for field in dataclasses.fields(TrainConfig)]


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_environment_config_is_its_fields_and_rebuilds_it(name):
    # routine's turn limit is its horizon, umbrella's its chain length
    field = {"routine": "horizon", "umbrella": "chain_length"}.get(name, "max_turns")
    env = make(name, **{field: 9})
    config = env.config()
    assert "name" not in config and config[field] == 9 and env.max_turns == 9 and type(env).name == name == env.name
    assert set(config) == {field.name for field in dataclasses.fields(env)}
    assert type(env)(**config) == env and make(name, **config) == env
    assert make_reference(env).max_turns == 9
    with pytest.raises(TypeError, match="unexpected keyword argument 'name'"):
        type(env)(name="other")  # a class variable, not a field


def test_make_policy_returns_named_functions(small_mad):
    network = make_policy(PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32), small_mad)
    assert isinstance(network, PolicyFunctions) and network._fields == ("init_fn", "policy_fn", "value_fn")
    assert network is make_policy_from_sizes(PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32),
                                             task_sizes(small_mad))  # cached: one set of jitted functions


def test_renamed_names():
    assert isinstance(jaxcredit.envs.problems, types.ModuleType)  # the module, no longer shadowed
    assert jaxcredit.envs.find_solution([8, 3], 5) == [(0, 1, 1)]
    for gone in ("solve", "REFERENCES"):
        assert not hasattr(jaxcredit.envs, gone)
    assert not hasattr(jaxcredit.analysis, "REFERENCES") and not hasattr(jaxcredit, "require_in_range")
    assert jaxcredit.analysis.REFERENCE_POLICIES == ("policy", "uniform", "optimal")
    assert set(jaxcredit.envs.REFERENCE_IMPLEMENTATIONS) == set(ENVIRONMENTS)


def test_an_unknown_credit_is_one_line_naming_the_registered_arms(tmp_path, capsys):
    """--credit is checked against the live registry (a --plugin may add arms), not an argparse list."""
    assert main(["train", "--credit", "nope", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err == ("jaxcredit: error: config.credit: unknown value 'nope'; choices: outcome, mc, exact, solver, "
                   "anchor, critic, predictor, progress-soft, progress-hard, progress-model, text-matched\n")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("argv, message", [
    (["sweep", "--preset", "nope", "--out", "x"], "sweep: argument --preset: invalid choice: 'nope'"),
    (["sweep", "--preset", "quick", "--backend", "dask", "--out", "x"], "argument --backend: invalid choice: 'dask'"),
    (["compare", "x", "--arm", "mc", "--regime", "equal"], "compare: argument --regime: invalid choice: 'equal'"),
    (["solve", "chess"], "solve: argument env: invalid choice: 'chess'"),
    (["audit", "--policy", "best"], "audit: argument --policy: invalid choice: 'best'"),
])
def test_declared_choices_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith("jaxcredit: error: ") and message in err
    assert err.count("\n") == 1


def test_solver_uniform_arm_and_an_old_sweep_directory(tmp_path):
    spec = PRESETS["arithmetic-study"]
    assert spec.arms["solver-uniform"] == {"credit": "solver", "credit_options.policy": "uniform"}
    assert "exact-uniform" not in spec.arms
    out = tmp_path / "old"
    os.makedirs(out)
    old = {"name": spec.name, "arm_order": ["outcome", "exact-uniform", "exact-policy", "solver-optimal"]}
    (out / "sweep_spec.json").write_text(json.dumps(old))
    with pytest.raises(ValueError, match="written before these arms were renamed: 'exact-uniform' -> 'solver-uniform'"):
        run_sweep(spec, str(out), resume=True, progress=False)
    assert sorted(os.listdir(out)) == ["sweep_spec.json"]  # nothing written


def test_env_help_and_config_doc_name_every_environment():
    from jaxcredit.cli import build_parser

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    for command in ("train", "audit"):
        env_help = next(a.help for a in commands[command]._actions if a.dest == "env")
        assert all(name in env_help for name in ENVIRONMENTS), (command, env_help)
    env_doc = TrainConfig.__doc__.split("env: ", 1)[1].split("\n      env_overrides", 1)[0]
    assert all(f"`{name}`" in env_doc for name in ENVIRONMENTS), env_doc
