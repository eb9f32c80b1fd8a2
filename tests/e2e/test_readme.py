"""What a newcomer meets is true: every Python block of the README (and of docs/) runs as shown,
offline, and prints what its comments say it prints."""

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
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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
