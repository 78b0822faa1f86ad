"""The documentation's examples run as written: the README's tour, and the pipeline and scale-out
examples of docs/environments.md and docs/scale-out.md."""

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def python_blocks(page: str, heading: str | None = None) -> list[str]:
    """The ```python blocks of the Markdown file `page` (relative to the repository root), or of its
    section under the heading `heading` (any level, up to the next heading of the same or a higher
    level; headings inside code blocks do not count)."""
    lines = (ROOT / page).read_text().splitlines(keepends=True)
    if heading is not None:
        fenced, start, level = False, None, None
        for i, line in enumerate(lines):
            if line.startswith("```"):
                fenced = not fenced
            match = None if fenced else re.match(r"^(#+) (.*)$", line.rstrip("\n"))
            if match and start is None and match.group(2) == heading:
                start, level = i, len(match.group(1))
            elif match and start is not None and len(match.group(1)) <= level:
                lines = lines[start:i]
                break
        else:
            assert start is not None, f"{page} has no heading {heading!r}"
            lines = lines[start:]
    return re.findall(r"```python\n(.*?)```", "".join(lines), flags=re.S)


def run_block(code: str, name: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {"__name__": "readme_example"})
    return out.getvalue()


def test_readme_tour_up_to_training():
    """The README's tour as written, up to `make_train` (building and running the trainer takes
    minutes on a CPU; the trainer tests cover it on tiny configs): the environment renders the
    selected cell, the optimal policy succeeds surely from there (6 turns, 4 cells) and uniform
    play rarely, and the tour's `TrainConfig` is valid."""
    blocks = python_blocks("README.md", "A tour")
    assert len(blocks) == 1
    code, training = blocks[0].split("trainer = make_train(config)")
    assert "jax.jit(trainer.train)" in training
    printed = run_block(code, "README.md")
    assert re.search(r"^turn 1/6 ", printed, flags=re.M), printed
    optimal = float(re.search(r"^optimal success probability from here: ([0-9.e-]+)$", printed, flags=re.M).group(1))
    uniform = float(re.search(r"^uniform success probability from here: ([0-9.e-]+)$", printed, flags=re.M).group(1))
    assert optimal == 1.0 and 0.0 < uniform < 0.1, printed


def test_pipeline_raw_vmap_example():
    blocks = python_blocks("docs/environments.md", "Use the environments in your own pipeline")
    assert len(blocks) == 2
    printed = run_block(blocks[0], "docs/environments.md")
    rate = float(re.search(r"succeeds on ([0-9.]+)% of tapes", printed).group(1))
    assert 5.0 < rate < 60.0, printed  # a tiny MAD: random legal play sometimes succeeds, often not


def test_pipeline_gymnax_example_unmodified_rejax_ppo_learns_default_mad():
    """docs/environments.md's rejax example is the CI test of the adapter with a published trainer:
    rejax PPO, unmodified, one `make_gymnax("MAD-v0")` call with the adapter's defaults, 65,536
    steps; its greedy policy succeeds far more often than the uniform random one on 512 fresh tapes."""
    pytest.importorskip("rejax")
    block = python_blocks("docs/environments.md", "A published gymnax trainer, unmodified")[0]
    printed = run_block(block, "docs/environments.md")
    assert printed.startswith("17 (243,) float32\n"), printed  # 2 * 8 + 1 actions, one-hot 9 tokens x 27
    greedy = float(re.search(r"^greedy success ([0-9.]+)$", printed, flags=re.M).group(1))
    uniform = float(re.search(r"^uniform random success ([0-9.]+)$", printed, flags=re.M).group(1))
    assert uniform < 0.03 and greedy > 0.5, printed


def test_scale_out_devices_example_on_eight_devices():
    blocks = python_blocks("docs/scale-out.md")
    assert len(blocks) == 1
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8"}
    done = subprocess.run([sys.executable, "-c", blocks[0]], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("8 devices, same returns; mean ")


def test_python_blocks_reads_one_section(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "p.md").write_text("# P\n\n## A\n\n```python\na\n```\n\n### A.1\n\n"
                                   "```python\n# not a heading\nb\n```\n\n## B\n\n```python\nc\n```\n")
    assert python_blocks("p.md", "A") == ["a\n", "# not a heading\nb\n"]
    assert python_blocks("p.md", "B") == ["c\n"]
    assert len(python_blocks("p.md")) == 3
