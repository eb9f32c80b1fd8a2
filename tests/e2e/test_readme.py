"""What a newcomer meets is true: the README stays a front door (small, every docs page listed); every
Python block of the README (and of the pages it links to) runs as shown, offline, and prints what its
comments say it prints; every link leads somewhere; the README's table of where each part lives, and
docs/layout.md's module-by-module layout, name what exists and every folder of the package."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.patience import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[2]
# The README and the pages it links to.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
PAGES.append(ROOT / "statemachines" / "README.md")
PAGES.append(ROOT / "CONTRIBUTING.md")
BLOCKS = [block for page in PAGES for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)]
PRINTED = re.compile(r"^\s*print\(.*\)\s+# (.+)$", re.MULTILINE)


def test_the_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{n}" for n in range(len(BLOCKS))])
def test_every_python_block_runs_as_shown_and_prints_what_it_says(block: str, tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MODEL_ID", "RESUMABLE_"))}
    ran = subprocess.run(
        [sys.executable, "-c", block],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    for expected in PRINTED.findall(block):
        said = expected.split(":")[0].strip()  # what comes after a colon explains the output
        assert said in ran.stdout, f"the block says it prints {said!r}; it printed {ran.stdout!r}"


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_link_between_pages_leads_to_a_file_and_a_heading_that_exist(page: Path) -> None:
    broken = []
    for target, anchor in _LINK.findall(page.read_text()):
        if "://" in target:
            continue
        linked = (page.parent / target).resolve()
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}#{anchor}")
    assert broken == [], f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


README_LIMIT = 20_000  # bytes


def test_the_readme_stays_a_front_door_under_its_size_limit() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size < README_LIMIT, (
        f"README.md is {size:,} bytes, over its {README_LIMIT:,}: move the detail to its docs/ page "
        "(docs/*.md; the README's Documentation table says which holds what) and leave a line that links it"
    )


def test_the_readme_lists_every_docs_page() -> None:
    linked = set(_LINK.findall((ROOT / "README.md").read_text()))
    pages = [p.relative_to(ROOT).as_posix() for p in PAGES[1:]]
    unlisted = [page for page in pages if (page, "") not in linked]
    assert unlisted == [], f"the README's Documentation table leaves out {unlisted}: give each a row, one line"


def _folders() -> tuple[list[str], list[str]]:
    """Every folder of the package, and every top-level folder but shared/ (its package stands for it)."""
    package = ROOT / "shared" / "resumable"
    folders = [f"shared/resumable/{p.name}/" for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"]
    top = [f"{p.name}/" for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith((".", "__", "shared"))]
    return folders, top


def _check_names(page: str, named: list[str]) -> None:
    missing = [path for path in named if not (ROOT / path).exists()]
    assert missing == [], f"{page} names what does not exist: {missing}"
    folders, top = _folders()
    unnamed = [folder for folder in folders if folder not in named]
    unnamed += [folder for folder in top if not any(name.startswith(folder) for name in named)]
    assert unnamed == [], f"{page} leaves out folders: {unnamed}"


def _where_each_part_lives() -> list[str]:
    """The paths the first column of the README's table of where each part lives names."""
    section = (ROOT / "README.md").read_text().split("### Where each part lives", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [path for row in rows for path in re.findall(r"`([^`]+)`", row.split("|")[1])]


def test_the_readmes_table_names_what_exists_and_every_folder_of_the_package() -> None:
    _check_names("README's table of where each part lives", _where_each_part_lives())


def _layout() -> dict[str, str]:
    """docs/layout.md's module-by-module block: each path it names (first word of a line; an indented
    one under the last unindented), with what its lines say of it."""
    block = (ROOT / "docs" / "layout.md").read_text().split("## Folders and modules", 1)[1].split("```", 2)[1]
    paths: dict[str, str] = {}
    parent, path = "", ""
    for line in block.splitlines()[1:]:
        first = line.split()[0] if line.strip() else ""
        if first.endswith(("/", ".yaml", ".toml", ".py,", ".py")):
            name = first.rstrip(",")
            if line.startswith("  "):
                path = parent + name
            else:
                path = parent = name
            paths[path] = ""
        if path:
            paths[path] += " " + line.strip()
    return paths


def test_the_detailed_layout_names_what_exists_every_folder_of_the_package_and_each_of_their_folders() -> None:
    layout = _layout()
    _check_names("docs/layout.md", list(layout))
    folders, _ = _folders()
    unnamed = [
        f"{folder}{sub.name}/"
        for folder in folders
        for sub in (ROOT / folder).iterdir()
        if sub.is_dir() and sub.name != "__pycache__" and f" {sub.name}/" not in layout[folder]
    ]
    assert unnamed == [], f"docs/layout.md does not say what these folders hold: {unnamed}"


def test_every_test_docs_aws_calls_names_for_a_limit_exists() -> None:
    page = (ROOT / "docs" / "aws-calls.md").read_text()
    named = re.findall(r"`(\w+\.py)::(\w+)`", page) + [(None, t) for t in re.findall(r"`::(\w+)`", page)]
    assert len(named) >= 10
    sources = {path.name: path.read_text() for path in (ROOT / "tests").rglob("test_*.py")}
    missing = [
        test
        for file, test in named
        if not any(f"def {test}(" in text for name, text in sources.items() if file in (None, name))
    ]
    assert missing == [], f"docs/aws-calls.md names tests that do not exist: {missing}"
