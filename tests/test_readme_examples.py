"""The README's "Use the environments in your own pipeline" and "Scale out" examples run as written."""

import contextlib
import io
import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def python_blocks(heading: str) -> list[str]:
    """The ```python blocks of the README section `## heading` (up to the next `## `)."""
    with open(README) as f:
        text = f.read()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end != -1 else None]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def run_block(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    return out.getvalue()


def test_pipeline_raw_vmap_example():
    blocks = python_blocks("Use the environments in your own pipeline")
    assert len(blocks) == 2
    printed = run_block(blocks[0])
    rate = float(re.search(r"succeeds on ([0-9.]+)% of tapes", printed).group(1))
    assert 5.0 < rate < 60.0, printed  # a tiny MAD: random legal play sometimes succeeds, often not


def test_pipeline_gymnax_example_unmodified_rejax_ppo_learns_default_mad():
    """The README's rejax example is the CI test of the adapter with a published trainer: rejax PPO,
    unmodified, one `make_gymnax("MAD-v0")` call with the adapter's defaults, 65,536 steps; its
    greedy policy succeeds far more often than the uniform random one on 512 fresh tapes."""
    pytest.importorskip("rejax")
    block = python_blocks("Use the environments in your own pipeline")[1]
    printed = run_block(block)
    assert printed.startswith("17 (243,) float32\n"), printed  # 2 * 8 + 1 actions, one-hot 9 tokens x 27
    greedy = float(re.search(r"^greedy success ([0-9.]+)$", printed, flags=re.M).group(1))
    uniform = float(re.search(r"^uniform random success ([0-9.]+)$", printed, flags=re.M).group(1))
    assert uniform < 0.03 and greedy > 0.5, printed


def test_scale_out_devices_example_on_eight_devices():
    blocks = python_blocks("Scale out")
    assert len(blocks) == 1
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    done = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("8 devices, same returns; mean ")
