"""``make deploy`` without AWS credentials says so in one line; without app/, sam build's app layer is a
note (the demo's AgentFactory leaves it out of the stack). What ``sam build`` builds of everything the
template declares is checked where docs/your-agent.md's make predeploy runs it
(tests/e2e/test_your_agent.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from layers.build import app_layer, build_artifacts
from tests.patience import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".venv" / "sam" / "bin" / "sam"


def test_make_deploy_without_credentials_fails_with_one_clear_line(tmp_path: Path) -> None:
    nowhere = str(tmp_path / "none")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere, "AWS_EC2_METADATA_DISABLED": "true"}
    env |= {"AWS_DEFAULT_REGION": "us-east-1"}
    ran = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "deploy_check.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stderr.count("\n") == 1 and "make deploy: no usable AWS credentials" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr and "nothing was deployed" in ran.stderr


def test_without_app_the_app_layer_sam_build_builds_is_a_note(tmp_path: Path) -> None:
    build_artifacts(tmp_path, app_layer(tmp_path / "no-app"))
    assert [p.name for p in (tmp_path / "python").iterdir()] == ["NO-APP.txt"]
