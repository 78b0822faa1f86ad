"""The docs say what the software is, not how it was made: no word of the development process.

History belongs in CHANGELOG.md; a page under docs/ or the README that speaks of sessions, helpers,
lost runs or development machines is written for someone who was there, not for the reader.
"""

import re
from pathlib import Path

import pytest

# Case-insensitive, word-bounded. "helper" is a word about people here; the docs say "function".
PROCESS_WORDS = (
    r"\bsessions?\b",
    r"\bhelpers?\b",
    r"\bworktrees?\b",
    r"\blost with\b",
    r"\bwas lost\b",
    r"\bwere lost\b",
    r"\bearlier runs?\b",
    r"\bprevious runs?\b",
    r"\bsuperseded\b",
    r"\bdevelopment machines?\b",
    r"\bthis round\b",
    r"\btried and dropped\b",
    r"\bCI's last\b",
)

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = tuple(re.compile(word, re.IGNORECASE) for word in PROCESS_WORDS)


def _process_words(pages: list[Path], root: Path = ROOT) -> list[str]:
    """`file:line: word` for every process word on the given pages."""
    found = []
    for page in pages:
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            for pattern in PATTERNS:
                for match in pattern.finditer(line):
                    found.append(f"{page.relative_to(root)}:{number}: {match.group(0)!r}")
    return found


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_docs_pages_use_no_process_words(page):
    found = _process_words([page])
    assert not found, "development-process words in the docs:\n" + "\n".join(found)


def test_readme_and_results_pages_use_no_process_words():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs" / "results").rglob("*.md"))]
    found = _process_words(pages)
    assert not found, "development-process words:\n" + "\n".join(found)


def test_the_check_names_file_line_and_word(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# P\n\nA helper function.\nMeasured in the fourth Session.\nA sessionless line.\n")
    assert _process_words([page], root=tmp_path) == ["p.md:3: 'helper'", "p.md:4: 'Session'"]


# A published page names paths a reader has: relative to the repository, not the directory of the
# machine the run was made on. Records keep the paths their runs wrote.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root)/")


def test_published_pages_name_no_machine_paths():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "docs").rglob("*.json"))]
    found = [f"{page.relative_to(ROOT)}:{number}" for page in pages if "record" not in page.relative_to(ROOT).parts
             for number, line in enumerate(page.read_text().splitlines(), start=1) if MACHINE_PATH.search(line)]
    assert not found, "absolute machine paths on published pages:\n" + "\n".join(found)
