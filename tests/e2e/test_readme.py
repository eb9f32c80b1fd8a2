"""What a newcomer meets is true: every Python block of the README (and of the notes it links to) runs
as shown, offline, and prints what its comments say it prints; every link leads somewhere; the
README's layout names the folders that exist, and every folder of the package."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.patience import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[2]
# The README and the longer notes it links to.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]
PAGES.append(ROOT / "statemachines" / "README.md")
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


def _layout() -> list[str]:
    """The paths the README's Layout section names, first word of each line."""
    section = (ROOT / "README.md").read_text().split("## Layout", 1)[1]
    block = section.split("```", 2)[1]
    paths, parent = [], ""
    for line in block.splitlines()[1:]:
        if not line.strip() or not line.split()[0].endswith(("/", ".yaml", ".py,", ".py")):
            continue
        name = line.split()[0].rstrip(",")
        if line.startswith("  "):
            paths.append(parent + name)
        else:
            parent = name
            paths.append(name)
    return paths


def test_the_readmes_layout_names_what_exists_and_every_folder_of_the_package() -> None:
    named = _layout()
    missing = [path for path in named if not (ROOT / path).exists()]
    assert missing == [], f"README's layout names what does not exist: {missing}"
    package = ROOT / "shared" / "resumable"
    folders = [f"shared/resumable/{p.name}/" for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"]
    unnamed = [folder for folder in folders if folder not in named]
    assert unnamed == [], f"README's layout leaves out package folders: {unnamed}"
    top = [f"{p.name}/" for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "shared"]
    assert [folder for folder in top if not any(n.startswith(folder) for n in named)] == []
