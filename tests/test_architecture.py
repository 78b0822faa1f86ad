"""The architecture's rules, checked on the source: one-way layer dependencies, and documentation
whose links and anchors all resolve (docs/architecture.md states the rules this file enforces)."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# folder -> (import name, the layers of jaxcredit it may import besides itself and the core)
LAYERS = {
    "jaxcredit": ("jaxcredit", set()),
    "envs": ("jaxcredit.envs", set()),
    "train": ("jaxcredit.train", {"jaxcredit.envs"}),
    "analysis": ("jaxcredit.analysis", {"jaxcredit.envs"}),
    "agents": ("jaxcredit.agents", {"jaxcredit.envs"}),
    "benchmarks": ("jaxcredit.benchmarks", {"jaxcredit.envs", "jaxcredit.train", "jaxcredit.analysis",
                                            "jaxcredit.agents"}),
    "suite": ("jaxcredit.suite", {"jaxcredit.envs", "jaxcredit.train", "jaxcredit.analysis"}),
}
SUBPACKAGES = {name for name, _ in LAYERS.values() if name != "jaxcredit"}
CLI = ROOT / "jaxcredit" / "cli"  # the command line: a package of the core that alone may import everything
MAY_IMPORT_EVERYTHING = set(CLI.glob("*.py"))


def _layer_files(folder: str) -> list[Path]:
    """A layer's Python files, subpackages included (the core's: `jaxcredit/arms/` and the command
    line's package `jaxcredit/cli/`)."""
    return sorted((ROOT / folder).rglob("*.py"))


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions count too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _layer_of(module: str) -> str | None:
    """The jaxcredit layer a module name belongs to (None outside jaxcredit)."""
    if module != "jaxcredit" and not module.startswith("jaxcredit."):
        return None
    for sub in SUBPACKAGES:
        if module == sub or module.startswith(sub + "."):
            return sub
    return "jaxcredit"


@pytest.mark.parametrize("folder", sorted(LAYERS))
def test_each_layer_imports_only_the_layers_below_it(folder):
    own, allowed = LAYERS[folder]
    allowed = allowed | {own, "jaxcredit"}
    files = _layer_files(folder)
    if folder != "agents":
        assert files, f"no Python files in {folder}/"
    violations = []
    for path in files:
        if path in MAY_IMPORT_EVERYTHING:
            continue
        for module in _imported_modules(path):
            layer = _layer_of(module)
            if layer is not None and layer not in allowed:
                violations.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not violations, "layer rule broken:\n" + "\n".join(sorted(violations))


def test_only_the_command_line_imports_the_command_line():
    assert (CLI / "__init__.py") in MAY_IMPORT_EVERYTHING and len(MAY_IMPORT_EVERYTHING) > 2
    importers = [f"{path.relative_to(ROOT)} imports {module}" for folder in sorted(LAYERS)
                 for path in _layer_files(folder) if path not in MAY_IMPORT_EVERYTHING
                 for module in _imported_modules(path) if module.split(".")[:2] == ["jaxcredit", "cli"]]
    assert not importers, "\n".join(importers)


def test_the_checker_sees_lazy_imports(tmp_path):
    """The check would catch a forbidden import hidden inside a function."""
    path = tmp_path / "lazy.py"
    path.write_text("def f():\n    from jaxcredit.train import make_train\n    return make_train\n")
    assert _layer_of(next(m for m in _imported_modules(path) if m.startswith("jaxcredit.train"))) == "jaxcredit.train"


# ----- environments and credit arms behind their interfaces -------------------------------------
# `env.name == "arithmetic"` or `isinstance(env, Arithmetic)` outside envs/ is a branch the environment
# should answer itself (a method or attribute of `jaxcredit.Environment`); `credit == "predictor"` outside
# the arms is one the arm should answer (a hook of `jaxcredit.CreditArm`).
NAME_BRANCH = re.compile(r"""\.name\s*[!=]=\s*['"]|\benv\.name\s*[!=]=|['"]\s*[!=]=\s*[\w.]*\.name\b""")
CREDIT_BRANCH = re.compile(r"""\bcredit\b['"]?\)?\s*[!=]=\s*['"]|['"]\s*[!=]=\s*[\w.]*\bcredit\b""")
# `spec["env"] == "arithmetic"`, `config.env != "mad"`: the same branch on a config's environment field
ENV_KEY_BRANCH = re.compile(r"""\benv(_name)?\b['"]?\)?\]?\s*[!=]=\s*['"]|['"]\s*[!=]=\s*[\w.]*\benv(_name)?\b""")
ARM_FILES = {ROOT / "jaxcredit" / "credit_arms.py", ROOT / "jaxcredit" / "arm_registry.py",
             *(ROOT / "jaxcredit" / "arms").glob("*.py")}


def _branches(pattern: re.Pattern, skip) -> list[str]:
    found = []
    for folder in sorted(LAYERS):
        for path in _layer_files(folder):
            if not skip(path):
                found += [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
                          for i, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    return found


def test_no_environment_name_branches_outside_envs():
    found = _branches(NAME_BRANCH, lambda path: path.parent.name == "envs")
    found += _branches(ENV_KEY_BRANCH, lambda path: path.parent.name == "envs")
    assert not found, "branch on an environment's name (add an Environment method instead):\n" + "\n".join(found)


def _environment_classes() -> set[str]:
    """The names of the environment classes: every class in envs/ that subclasses `Environment`, directly or
    through another environment class, and every registered one."""
    from jaxcredit.envs import ENVIRONMENTS

    bases = {}
    for path in _layer_files("envs"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", None) for b in node.bases}
    found, grew = {"Environment"}, True
    while grew:
        new = {name for name, parents in bases.items() if parents & found} - found
        found |= new
        grew = bool(new)
    return (found - {"Environment"}) | {cls.__name__ for cls in ENVIRONMENTS.values()}


def _type_branches(path: Path, classes: set[str]) -> list[str]:
    """`isinstance(x, C)` (C alone or in a tuple, by name or attribute) with C an environment class."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance",
                                                                                                 "issubclass"):
            if len(node.args) != 2:
                continue
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = {k.id if isinstance(k, ast.Name) else getattr(k, "attr", None) for k in kinds}
            if names & classes:
                found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}: "
                             f"{ast.unparse(node)}")
    return found


def test_no_environment_type_branches_outside_envs():
    classes = _environment_classes()
    assert {"MadSelectiveCopy", "Arithmetic", "Routine", "Umbrella"} <= classes
    found = [hit for folder in sorted(LAYERS) for path in _layer_files(folder) if path.parent.name != "envs"
             for hit in _type_branches(path, classes)]
    assert not found, "branch on an environment's type (add an Environment method instead):\n" + "\n".join(found)


def test_the_type_branch_check_catches_a_branch(tmp_path):
    path = tmp_path / "branchy.py"
    path.write_text("from jaxcredit.envs import arithmetic\nfrom jaxcredit.envs.mad import MadSelectiveCopy\n\n"
                    "def f(env):\n    if isinstance(env, MadSelectiveCopy):\n        return 1\n"
                    "    if isinstance(env, (int, arithmetic.Arithmetic)):\n        return 2\n"
                    "    return isinstance(env, jaxcredit.Environment)\n")
    found = _type_branches(path, _environment_classes())
    assert [hit.split(":")[1] for hit in found] == ["5", "7"], found  # the base class is no branch


def test_no_credit_name_branches_outside_the_arms():
    found = _branches(CREDIT_BRANCH, lambda path: path in ARM_FILES)
    assert not found, "branch on a credit arm's name (add a CreditArm hook instead):\n" + "\n".join(found)


@pytest.mark.parametrize("pattern, line", [
    (NAME_BRANCH, '    if env.name == "arithmetic":'), (NAME_BRANCH, "    if protocol.env.name != 'mad':"),
    (NAME_BRANCH, '    if "mad" == env.name:'),
    (ENV_KEY_BRANCH, '    return spec.get("base", {}).get("env") == "arithmetic"'),
    (ENV_KEY_BRANCH, '    if config.env != "mad":'), (ENV_KEY_BRANCH, '    if env_name == "mad":'),
    (ENV_KEY_BRANCH, """    tiny = {...} if env_fields["env"] == 'mad' else {}"""),
    (CREDIT_BRANCH, '    if config.credit == "predictor":'),
    (CREDIT_BRANCH, '    if config.get("credit") == "critic":'),
])
def test_the_branch_checks_catch_a_branch(pattern, line):
    assert pattern.search(line)


# ----- documentation links -----------------------------------------------------------------------
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _anchors(path: Path) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    anchors, counts, fenced = set(), {}, False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _links(path: Path) -> list[str]:
    links, fenced = [], False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            links += [a or b for a, b in LINK.findall(line)]
    return links


def test_every_markdown_link_and_anchor_resolves():
    broken = []
    for page in _markdown_files():
        for link in _links(page):
            if re.match(r"^[a-z]+:", link):  # http:, https:, mailto:
                continue
            target, _, anchor = link.partition("#")
            resolved = page if not target else (page.parent / target).resolve()
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_link_checker_catches_a_broken_anchor(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# Title\n\n## How budgets are matched\n\n```\n# not a heading\n```\n")
    assert _anchors(page) == {"title", "how-budgets-are-matched"}


def test_readme_mentions_nothing_outside_the_repository():
    text = (ROOT / "README.md").read_text()
    assert "shared folder" not in text and "../shared" not in text


def test_docs_mention_nothing_outside_the_repository():
    for page in _markdown_files()[1:]:
        text = page.read_text()
        assert "shared folder" not in text and "../shared" not in text, page


# ----- the README: a newcomer's few screens, with a link to every docs page ----------------------
README_MAX_LINES = 121  # at most 120 lines


def test_readme_is_short_and_links_every_docs_page():
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) < README_MAX_LINES
    linked = {(readme.parent / link.partition("#")[0]).resolve() for link in _links(readme)}
    unlinked = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_readme_opens_with_the_two_setup_commands():
    """.ci/run runs the second non-empty line of the README's first code block: keep it the test command."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```bash\n(.*?)^```", text, flags=re.S | re.M).group(1)
    assert text.index("```bash") == text.index("```")
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[0].startswith("pip install -e . && jaxcredit sweep --preset quick")
    assert commands[1] == 'pip install -e ".[test]" && python -m pytest -n 2 --dist loadfile'


def test_the_main_job_runs_at_least_eight_paired_seeds():
    """The README's first command answers with n >= 8 paired seeds, in one vmapped program per cell."""
    from jaxcredit.train import get_preset

    assert get_preset("quick").base["num_seeds"] >= 8


def test_the_main_job_runs_at_the_settings_its_tuning_record_chose(monkeypatch):
    """quick names a committed tuning.json made by `quick-tuning` (same task, arms and budget), and
    every cell runs at the record's chosen point."""
    from jaxcredit.train import get_preset

    monkeypatch.chdir(ROOT)
    quick, tuning = get_preset("quick"), get_preset("quick-tuning")
    assert quick.tuned == "docs/results/quick-tuning.json" and quick.tune is None
    assert (tuning.base, tuning.arms, tuning.tune_budget) == (quick.base, quick.arms, quick.budgets["attempts"])
    record = json.loads((ROOT / quick.tuned).read_text())
    assert set(record["arms"]) == set(quick.arms)
    for (regime, arm), config in quick.cell_configs().items():
        for field, value in record["arms"][arm]["overrides"].items():
            name = field.removeprefix("credit_options.")
            actual = getattr(config.credit_options, name) if name != field else getattr(config, field)
            assert actual == value, (regime, arm, field)


def test_every_results_page_opens_with_its_findings():
    pages = sorted((ROOT / "docs" / "results").glob("*.md"))
    assert pages
    late = [p.name for p in pages if "## Findings" not in p.read_text().splitlines()[:40]]
    assert not late, f"results pages without '## Findings' in their first 40 lines: {late}"


# ----- modules: short docstrings, no history, no long files --------------------------------------
MODULE_DOCSTRING_MAX_WORDS = 150
MODULE_MAX_LINES = 600
ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")  # a date, alone or in a timestamp
DOCS_LINK = re.compile(r"\bdocs/([\w./-]+\.md)(?:#([\w-]+))?")


def _package_modules() -> list[Path]:
    return [path for folder in sorted(LAYERS) for path in _layer_files(folder)]


def _docstrings_and_comments(source: str) -> list[str]:
    """Every docstring (module, class, function) and every `#` comment of a Python source."""
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                texts.append(doc)
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    texts += [token.string for token in tokens if token.type == tokenize.COMMENT]
    return texts


def _long_docstrings(paths) -> list[str]:
    long = []
    for path in paths:
        words = len((ast.get_docstring(ast.parse(path.read_text())) or "").split())
        if words > MODULE_DOCSTRING_MAX_WORDS:
            long.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {words} words")
    return long


def _dated(paths) -> list[str]:
    return [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {date}"
            for path in paths for text in _docstrings_and_comments(path.read_text())
            for date in ISO_DATE.findall(text)]


def test_every_module_docstring_is_at_most_150_words():
    """A module docstring says what the module is for and links its docs page for the rest."""
    long = _long_docstrings(_package_modules())
    assert not long, f"module docstrings over {MODULE_DOCSTRING_MAX_WORDS} words: {long}"


def test_no_docstring_or_comment_holds_a_date():
    """Code describes the present; history goes in CHANGELOG.md."""
    dated = _dated(_package_modules())
    assert not dated, f"dates in docstrings or comments: {dated}"


def test_no_module_is_over_600_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in _package_modules()
            if (n := len(p.read_text().splitlines())) > MODULE_MAX_LINES]
    assert not long, f"modules over {MODULE_MAX_LINES} lines: {long}"


def test_every_docs_link_in_a_module_docstring_resolves():
    broken = []
    for path in _package_modules():
        for page, anchor in DOCS_LINK.findall(ast.get_docstring(ast.parse(path.read_text())) or ""):
            target = ROOT / "docs" / page
            if not target.exists() or (anchor and anchor not in _anchors(target)):
                broken.append(f"{path.relative_to(ROOT)}: docs/{page}{'#' + anchor if anchor else ''}")
    assert not broken, f"module docstrings link what is not there: {broken}"


def test_the_module_checks_catch_a_long_docstring_and_a_date(tmp_path):
    short, long, dated = tmp_path / "short.py", tmp_path / "long.py", tmp_path / "dated.py"
    short.write_text('"""' + " ".join(["word"] * 150) + '"""\n')
    long.write_text('"""' + " ".join(["word"] * 151) + '"""\n')
    dated.write_text('"""Fine."""\n\nX = "2026-12-01"  # measured 2026-12-02\n\n\n'
                     'def f():\n    """Since 2026-12-03T05:50:12Z."""\n')
    assert _long_docstrings([short, long]) == [f"{long}: 151 words"]
    assert _dated([short, dated]) == [f"{dated}: 2026-12-03", f"{dated}: 2026-12-02"]
