"""The gradient-SNR study's setup: which environment it measures, the policy it measures (an
untrained network, the tabular policy, or a policy checkpoint, checked against the environments
it is to read), and where its record goes.

`snr_environment` answers whether an environment can be measured (`Environment.supports_density_snr`:
decisions at a chosen density); `fixed_horizon_setup` and `fixed_decisions_setup` build the
environments and the policy of the fixed-horizon study (`snr.run_snr`) and of the fixed-decision
study (`snr_decisions.run_fixed_decisions`); `write_snr` writes `snr.json` (and `snr.png`). Every
refusal is a `ValueError` with one line.
"""

from __future__ import annotations

import os
from typing import Any

from jaxcredit.analysis.snr import decision_counts, plot_ratio, tabular_policy
from jaxcredit.analysis.snr_decisions import fixed_decision_envs
from jaxcredit.envs import ENVIRONMENTS, make
from jaxcredit.policy import PolicyConfig, make_policy, task_sizes
from jaxcredit.rundir_io import check_writable_dir, make_dirs, write_json_atomic


def snr_environment(name: str) -> str:
    """`name` when the SNR study can measure that environment; raises `ValueError` otherwise."""
    if not getattr(ENVIRONMENTS.get(name), "supports_density_snr", False):
        raise ValueError(f"snr measures the routine environment, not {name!r}")
    return name


def _refuse_policy(policy: str) -> None:
    raise ValueError(f"--policy must be network or tabular, got {policy!r}")


def _checkpoint(path: str, env_name: str):
    from jaxcredit.checkpoint import load_policy_checkpoint

    return load_policy_checkpoint(path, make=make, env_name=env_name)


def fixed_horizon_setup(env_name: str, env_config: dict, *, checkpoint: str | None, policy: str,
                        network: PolicyConfig, densities, seed: int) -> tuple[Any, Any, Any, str]:
    """`(env, policy_fn, params, policy)` of the fixed-horizon study: the checkpoint's policy and
    environment, or `env_name` built with `env_config` and an untrained `policy` (`network` of
    config `network`, or `tabular`) initialised from `seed`. Raises `ValueError` for another
    policy or a density that rounds to no decision (before the network is built)."""
    if checkpoint:
        loaded = _checkpoint(checkpoint, env_name)
        return loaded.env, loaded.policy_fn, loaded.params, "checkpoint"
    env = make(env_name, **env_config)
    if policy == "tabular":
        init_fn, policy_fn = tabular_policy(env)
    elif policy == "network":
        init_fn, policy_fn = make_policy(network, env)[:2]
    else:
        _refuse_policy(policy)
    decision_counts(densities, env.horizon)  # before the network is built
    import jax

    return env, policy_fn, init_fn(jax.random.key(seed)), policy


def fixed_decisions_setup(env_name: str, env_config: dict, *, decisions: int, densities, checkpoint: str | None,
                          policy: str, network: PolicyConfig) -> tuple[list, dict]:
    """`(envs, options)` of the fixed-decision study (`snr_decisions.run_fixed_decisions(envs,
    config, seeds=..., **options)`): one environment per density with `decisions` decisions,
    configured by `env_config` or, with a checkpoint, by the checkpoint's own environment (its
    `placement` from `env_config`), whose network must read every one of them. Raises `ValueError`
    for a network that reads other sizes or an unknown policy."""
    options = {"policy": policy}
    if checkpoint:
        loaded = _checkpoint(checkpoint, env_name)
        env_config = {**{k: v for k, v in loaded.env.config().items() if k not in ("horizon", "density", "decisions")},
                      "placement": env_config["placement"]}
        options = {"policy": "checkpoint", "policy_fn": loaded.policy_fn, "params": loaded.params}
    envs = fixed_decision_envs(decisions=decisions, densities=densities, **env_config)
    if checkpoint and task_sizes(envs[0]) != task_sizes(loaded.env):
        raise ValueError(f"checkpoint network reads {task_sizes(loaded.env)}, the fixed-decision grid needs "
                         f"{task_sizes(envs[0])} (train it with the same decisions, cue and vocab_horizon)")
    if options["policy"] == "network":
        options["init_fn"], options["policy_fn"] = make_policy(network, envs[0])[:2]
    elif options["policy"] not in ("tabular", "checkpoint"):
        _refuse_policy(policy)
    return envs, options


def write_snr(out: str, summary: dict, *, plot_title: str | None = None) -> dict:
    """Write `summary` as `out/snr.json` and, with `plot_title`, its ratio plot `out/snr.png`
    (recorded as `summary["plot"]`, after the JSON as before). Returns `summary`."""
    make_dirs(check_writable_dir(out))
    write_json_atomic(os.path.join(out, "snr.json"), summary)
    if plot_title is not None:
        summary["plot"] = plot_ratio(summary, os.path.join(out, "snr.png"), title=plot_title)
    return summary


__all__ = ["fixed_decisions_setup", "fixed_horizon_setup", "snr_environment", "write_snr"]
