"""Shared fixtures: environments and compiled functions built once per test run (pytest session).

Compilation is most of the suite's cost, so before JAX starts this file sets, for the test
processes and every subprocess they launch (they inherit the environment):
- `XLA_FLAGS=--xla_backend_optimization_level=0`: XLA's CPU backend skips LLVM's optimisation
  passes, which halves compile time; the programs compute the same functions (results can differ
  in the last bits of a float, never more), and each test compares runs made under the same flags.
- `--xla_cpu_use_fusion_emitters=false`: the CPU backend emits its fusions with the older
  elemental emitter instead of the MLIR fusion emitters, which compiles a tiny trainer's iteration
  in about a quarter of the CPU time (7.7 -> 2.1 CPU s for the exact arm) and halves the heaviest
  files (tests/test_learning.py + tests/test_afterstate.py: 329 -> 159 CPU s). XLA aborts on a flag
  it does not know, so this one is set only after a subprocess shows that the installed jaxlib
  accepts it (`_accepted_xla_flags`, ~2 s once per run).
- a persistent compilation cache in a fresh temporary directory, shared by the xdist workers and
  the subprocesses of one test run and removed at its end: a program compiled twice (the same
  tiny trainer built by two tests, a CLI subprocess repeating an in-process program) compiles once.
- `RAY_worker_niceness=0`: Ray runs its workers at niceness 15 by default, so beside the other
  xdist worker (niceness 0) the Ray test's workers got a few percent of a core: importing jax and
  jaxcredit took them ~47 s instead of ~4 s, and that one test ran 230-300 s.
Set `JAXCREDIT_TEST_FULL_XLA=1` to run the suite with XLA's default optimisation and no cache.

The costliest files run first (`pytest_collection_modifyitems`, from `tests/file_costs.json`).

`JAXCREDIT_TEST_CPU_LOG=FILE` appends one JSON line per test phase to FILE: its node id, phase,
wall seconds, CPU seconds (this process, and the subprocesses it waited for), and the seconds and
number of XLA compiles in this process. CPU seconds
depend far less on other jobs than wall time does, so they say where the suite's time goes on a
loaded machine (`python tests/cpu_report.py FILE` sums them per file).
"""

import json
import os
import resource
import shutil
import tempfile
import time

import pytest

TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0",)
OPTIONAL_XLA_FLAGS = ("--xla_cpu_use_fusion_emitters=false",)  # newer flags: set only where jaxlib knows them


def _accepted_xla_flags(flags: tuple[str, ...]) -> tuple[str, ...]:
    """`flags` if a fresh Python with them in `XLA_FLAGS` can run a jitted program, else `()`:
    XLA aborts the process on a flag it does not know, so an unchecked flag removed by a later jaxlib
    would end every test process."""
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {' '.join(flags)}".strip()}
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.jit(lambda x: x + 1)(1).block_until_ready()"],
                           env=env, capture_output=True, timeout=120)
    return flags if probe.returncode == 0 else ()


if not os.environ.get("JAXCREDIT_TEST_FULL_XLA"):
    controller = "PYTEST_XDIST_WORKER" not in os.environ  # workers inherit the controller's XLA_FLAGS
    flags = TEST_XLA_FLAGS + (_accepted_xla_flags(OPTIONAL_XLA_FLAGS) if controller else ())
    for flag in flags:
        if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:  # the xdist controller: workers inherit it
        os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxcredit-test-xla-cache-")
        os.environ["JAXCREDIT_TEST_OWNS_CACHE"] = os.environ["JAX_COMPILATION_CACHE_DIR"]
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")
os.environ.setdefault("RAY_worker_niceness", "0")

from jaxcredit.envs import make, make_reference  # noqa: E402  (after the XLA settings above)


def pytest_unconfigure(config):
    """The process that made the session's compilation cache removes it (xdist workers never do)."""
    owned = os.environ.get("JAXCREDIT_TEST_OWNS_CACHE")
    if owned and not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(owned, ignore_errors=True)


def _cpu_seconds() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


_COMPILES = {"seconds": 0.0, "count": 0, "listening": False}  # this process's XLA compiles so far


def _count_compile(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES["seconds"] += duration
        _COMPILES["count"] += 1


def _log_phase(item, phase: str):
    """A hook wrapper body: time one phase of `item` and append it to `JAXCREDIT_TEST_CPU_LOG`,
    with the seconds and number of XLA compiles in this process during it (`jax.monitoring`)."""
    path = os.environ.get("JAXCREDIT_TEST_CPU_LOG")
    if not path:
        yield
        return
    if not _COMPILES["listening"]:
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(_count_compile)
        _COMPILES["listening"] = True
    wall, (own, children) = time.perf_counter(), _cpu_seconds()
    compiled, compiles = _COMPILES["seconds"], _COMPILES["count"]
    yield
    after = _cpu_seconds()
    with open(path, "a") as f:  # one short line per write: appends from the xdist workers do not interleave
        f.write(json.dumps({"test": item.nodeid, "phase": phase, "wall": time.perf_counter() - wall,
                            "cpu": after[0] - own, "children_cpu": after[1] - children,
                            "compile": _COMPILES["seconds"] - compiled,
                            "compiles": _COMPILES["count"] - compiles}) + "\n")


FILE_COSTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "file_costs.json")


def pytest_collection_modifyitems(session, config, items):
    """Run the costliest test files first (`file_costs.json`: wall seconds per file, written by
    `tests/cpu_report.py --write-costs`; a file it lacks counts as the median). `--dist loadfile`
    hands whole files to the workers in this order, so the long files start early and the short
    ones fill in at the end instead of one long file running alone on one worker. The order
    within a file is kept."""
    try:
        with open(FILE_COSTS) as f:
            costs = json.load(f)
    except (OSError, ValueError):
        return
    known = sorted(costs.values())
    median = known[len(known) // 2] if known else 0.0
    first_seen = {}
    for item in items:
        first_seen.setdefault(item.path.name, len(first_seen))
    items.sort(key=lambda item: (-costs.get(item.path.name, median), first_seen[item.path.name]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _log_phase(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _log_phase(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _log_phase(item, "teardown")


@pytest.fixture(scope="session")
def xla_flags():
    """The suite's XLA flags: `.required`, `.optional` and `.accepted` (the probe that decides
    whether the optional ones are set)."""
    import types

    return types.SimpleNamespace(required=TEST_XLA_FLAGS, optional=OPTIONAL_XLA_FLAGS, accepted=_accepted_xla_flags)


@pytest.fixture(scope="session")
def mad():
    return make("mad")


@pytest.fixture(scope="session")
def mad_reference(mad):
    return make_reference(mad)


@pytest.fixture(scope="session")
def arithmetic():
    return make("arithmetic")


@pytest.fixture(scope="session")
def arithmetic_reference(arithmetic):
    return make_reference(arithmetic)


# ----- policy, rollouts, branches (credit branch) -----

@pytest.fixture(scope="session")
def small_mad():
    """A MAD small enough for exact values and large-K Monte Carlo in tests (S = 16 positions)."""
    return make("mad", length=4, num_tokens=3, min_useful=1, max_useful=3, max_turns=6)


@pytest.fixture(scope="session")
def mad_policy(mad):
    """`(params, policy_fn, value_fn)` of the default ~100k-parameter network on default MAD.

    The action and value heads are perturbed so the policy is not exactly uniform and values differ.
    """
    import jax

    from jaxcredit.policy import PolicyConfig, make_policy

    init_fn, policy_fn, value_fn = make_policy(PolicyConfig(), mad)
    params = init_fn(jax.random.key(0))
    head = params["params"]["action_head"]
    head["kernel"] = 0.5 * jax.random.normal(jax.random.key(1), head["kernel"].shape)
    value_head = params["params"]["value_head"]  # zero-initialised too: perturb it so values differ
    value_head["kernel"] = 0.5 * jax.random.normal(jax.random.key(2), value_head["kernel"].shape)
    return params, policy_fn, value_fn


@pytest.fixture(scope="session")
def mad_init_batch(mad):
    """`jit(vmap(mad.init))`: keys `[B]` -> states `[B]`."""
    import jax

    return jax.jit(jax.vmap(mad.init))


# ----- the trainer on a tiny task (train branch): one compiled iteration per arm, shared -----

TINY_MAD = {"length": 3, "num_tokens": 2, "min_useful": 1, "max_useful": 2, "max_turns": 5}
TINY_TRAIN = {"env": "mad", "env_overrides": TINY_MAD, "d_model": 32, "num_layers": 1, "num_heads": 2,
              "mlp_dim": 64, "problems_per_iteration": 8, "attempts_per_problem": 4, "learning_rate": 3e-3,
              "eval_problems": 64, "num_seeds": 2, "num_evals": 2, "budget": 256,
              "holdout_fraction": 0.0}  # 18 tapes: too few to hold out


def traced_once(fn, name: str):
    """`fn` wrapped by `chex.assert_max_traces(n=1)` under its own `name`: tracing it a second time in
    the session (a change of argument structure, a retrace per call) fails the test that does it.
    chex counts traces per (definition site, source, name), so each wrapped function needs its own name."""
    import chex

    def step(*args):
        return fn(*args)

    step.__name__ = step.__qualname__ = name
    return chex.assert_max_traces(step, n=1)


@pytest.fixture(scope="session")
def tiny_arm():
    """`tiny_arm(**fields) -> (trainer, iterate)`: the trainer of `TINY_TRAIN` updated with
    `fields` and its jitted `iterate`, built and compiled once per distinct `fields` per session;
    `iterate` may be traced only once in the session (`traced_once`)."""
    import jax

    from jaxcredit.train import config_from_dict, make_train

    cache = {}

    def get(**fields):
        key = tuple(sorted((k, repr(v)) for k, v in fields.items()))
        if key not in cache:
            trainer = make_train(config_from_dict({**TINY_TRAIN, **fields}))
            cache[key] = (trainer, jax.jit(traced_once(trainer.iterate, f"iterate{key}")))
        return cache[key]

    return get


@pytest.fixture(scope="session")
def tiny_greedy_success(tiny_arm):
    """`success(params) -> float32 []`: greedy success on the tiny task's evaluation problems,
    compiled once (every arm of `TINY_TRAIN` has the same network and evaluation set)."""
    import jax
    import jax.numpy as jnp

    from jaxcredit.rollout import rollout
    from jaxcredit.train.evaluation import greedy

    trainer, _ = tiny_arm()
    env, problems = trainer.env, trainer.eval_sets["default"]

    @jax.jit
    def success(params):
        starts = jax.vmap(env.init_problem)(problems)
        episodes, _ = rollout(env, greedy(trainer.policy_fn), params, starts, jax.random.key(0),
                              num_turns=env.max_turns)
        return jnp.mean(episodes.episode_return > 0)

    return success
