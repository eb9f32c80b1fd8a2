"""`make run`'s offline demo: a pause in one process, the approval in a new one, one execution."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.patience import HANG_SECONDS


@pytest.mark.slow
def test_the_demo_resumes_in_a_new_process_and_runs_the_action_exactly_once() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "resumable.local.demo"], capture_output=True, text=True, timeout=HANG_SECONDS, check=True
    )
    lines = done.stdout.splitlines()
    assert "[process 1] stop_reason=interrupt" in lines
    assert any(line.startswith("[process 2] rebuilt every agent from scratch") for line in lines)
    assert "[process 2] delete_record('prod-db') ran 1 time(s)" in lines
    assert lines[-1] == "[process 2] the approved action ran exactly once"
