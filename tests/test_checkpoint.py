"""Policy checkpoints: exact round trip, rebuilt policy, clear errors, atomic writes."""

import glob
import os
import shutil

import jax
import numpy as np
import pytest

from jaxcredit.checkpoint import load_policy, load_policy_checkpoint, save_policy
from jaxcredit.envs import make
from jaxcredit.policy import PolicyConfig, make_policy

# After a failed read, orbax (tensorstore) may call back into its closed asyncio loop; that is
# reported as an "unraisable" exception in a background thread, not an error of ours.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

CONFIG = PolicyConfig(d_model=16, num_layers=1, num_heads=2, mlp_dim=32)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, small_mad):
    init_fn, policy_fn, _ = make_policy(CONFIG, small_mad)
    params = init_fn(jax.random.key(0))
    params["params"]["action_head"]["kernel"] = jax.random.normal(jax.random.key(1), (16, small_mad.num_actions))
    path = str(tmp_path_factory.mktemp("checkpoints") / "policy")
    save_policy(path, params, policy_config=CONFIG, env_name="mad", env_config={"length": 4, "max_turns": 6},
                extra={"step": 7})
    return path, params, policy_fn


def test_round_trip_rebuilds_the_same_policy(saved, small_mad, mad_init_batch):
    path, params, policy_fn = saved
    loaded_fn, loaded, info = load_policy(path)
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(loaded)):
        np.testing.assert_array_equal(a, b)
    assert jax.tree_util.tree_structure(params) == jax.tree_util.tree_structure(loaded)
    assert info["policy_config"] == CONFIG and info["env_name"] == "mad"
    assert info["env_config"] == {"length": 4, "max_turns": 6} and info["extra"] == {"step": 7}
    assert info["task_sizes"]["num_actions"] == small_mad.num_actions
    states = jax.vmap(small_mad.init)(jax.random.split(jax.random.key(2), 4))
    np.testing.assert_array_equal(loaded_fn(loaded, states.observation, states.legal_action_mask),
                                  policy_fn(params, states.observation, states.legal_action_mask))
    with pytest.raises(ValueError, match="already exists"):
        save_policy(path, params, policy_config=CONFIG, env_name="mad", env_config={})


def test_missing_and_corrupted_checkpoints_are_clear_errors(saved, tmp_path):
    path, _, _ = saved
    missing = str(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_policy(missing)
    (tmp_path / "not-a-checkpoint").mkdir()  # a directory, but no checkpoint's files in it
    with pytest.raises(FileNotFoundError, match="not-a-checkpoint: the directory holds neither its info nor"):
        load_policy(str(tmp_path / "not-a-checkpoint"))
    for damage in ("params/manifest.ocdbt", "info/metadata", "garble"):
        copy = str(tmp_path / damage.replace("/", "_"))
        shutil.copytree(path, copy)
        if damage == "garble":
            for name in glob.glob(os.path.join(copy, "params", "ocdbt.process_0", "d", "*")):
                with open(name, "wb") as f:
                    f.write(b"not a tensor" * 8)
        else:
            os.remove(os.path.join(copy, damage))
        with pytest.raises(ValueError, match=f"corrupted checkpoint {copy}"):
            load_policy(copy)


def test_an_interrupted_write_leaves_no_checkpoint(saved, tmp_path, monkeypatch):
    """Orbax writes everything into a temporary directory and renames it last: stop it before
    the rename (as a crash would) and nothing exists at the checkpoint's path."""
    from orbax.checkpoint._src.path import atomicity

    async def crash_before_rename(self):
        raise RuntimeError("simulated crash before the final rename")

    monkeypatch.setattr(atomicity.AtomicRenameTemporaryPath, "finalize", crash_before_rename)
    _, params, _ = saved
    path = str(tmp_path / "interrupted")
    with pytest.raises(RuntimeError, match="simulated crash"):
        save_policy(path, params, policy_config=CONFIG, env_name="mad", env_config={})
    assert not os.path.exists(path)
    leftovers = glob.glob(path + ".orbax-checkpoint-tmp*")
    assert len(leftovers) == 1 and os.listdir(leftovers[0])  # the data went to the temporary directory
    with pytest.raises(ValueError, match="never finished"):
        load_policy(leftovers[0])


def test_load_policy_checkpoint_rebuilds_and_checks_its_environment(saved, small_mad, tmp_path):
    path, params, _ = saved  # its env_config is a 4-cell MAD of 12 tokens; its network reads small_mad's 3
    with pytest.raises(ValueError, match=r"its network has task sizes .*'vocab_size': 9.* but its environment mad "
                                         r"has .*'vocab_size': 27"):
        load_policy_checkpoint(path, make=make)
    good = tmp_path / "run" / "policies" / "seed-1"
    save_policy(good, params, policy_config=CONFIG, env_name="mad", env_config=small_mad.config())
    loaded = load_policy_checkpoint(tmp_path / "run", make=make, env_name="mad", seed_index=1)  # a run directory
    assert loaded.path == str(good) and loaded.env == small_mad and loaded.info["env_name"] == "mad"
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(loaded.params)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="was trained on 'mad', not 'arithmetic'"):
        load_policy_checkpoint(good, make=make, env_name="arithmetic")
    with pytest.raises(FileNotFoundError, match="no checkpoint directory"):
        load_policy_checkpoint(tmp_path / "nothing", make=make)
    edited = tmp_path / "edited"
    save_policy(edited, params, policy_config=CONFIG, env_name="mad", env_config={"length": 99})
    with pytest.raises(ValueError, match=r"corrupted checkpoint .*edited: its env_config cannot build 'mad' "
                                         r"\(mad.length must be in \[1, 16\], got 99\)"):
        load_policy_checkpoint(edited, make=make)
