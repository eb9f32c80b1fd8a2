"""``make load``, short: Locust's people on a local stack of the load test's own, then its invariants. A
count of requests is not held (how many fit in ten seconds depends on the machine), only that people
were served, nothing failed and every invariant held."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tools.load import LOCUST, ROOT


@pytest.mark.slow
def test_a_short_load_serves_every_route_without_an_error_and_every_invariant_holds(tmp_path: object) -> None:
    assert LOCUST.exists(), "make test installs Locust in .venv/load (make load does too)"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.load",
            "--users",
            "6",
            "--spawn-rate",
            "6",
            "--seconds",
            "10",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    said = ran.stdout
    assert ran.returncode == 0, said[-3000:] + ran.stderr[-3000:]
    assert "invariants: every one held" in said and "errors: none" in said
    routes = [line.split()[0:3] for line in said.splitlines() if line.startswith(("GET /", "POST /"))]
    assert ["POST", "/sessions/{id}/turns"] in [r[:2] for r in routes], said
    assert any(line.startswith("checked: ") and " 0 turns" not in line for line in said.splitlines()), said
