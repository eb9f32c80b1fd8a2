"""``sam build`` builds everything the template declares, the layers included (their makefile build
method runs the same builds as make layer), and the built layer imports and holds no local-only code;
``make deploy`` without AWS credentials says so in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.patience import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[2]
SAM = ROOT / ".venv" / "sam" / "bin" / "sam"


@pytest.mark.slow
def test_sam_build_builds_the_layers_and_every_function(tmp_path: Path) -> None:
    assert SAM.exists(), f"no SAM CLI at {SAM}: make test installs it (tools/sam-requirements.txt)"
    built = tmp_path / "build"
    ran = subprocess.run(
        [str(SAM), "build", "--build-dir", str(built), "--template-file", "template.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0"},
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    layer = built / "SharedLayer" / "python"
    assert (layer / "resumable" / "web" / "inbox.html").exists()
    assert not (layer / "resumable" / "local").exists() and not (layer / "resumable" / "cli").exists()
    assert not (layer / "boto3").exists()
    for function in ("StartTurnFunction", "SubmitApprovalFunction", "CancelFunction", "GetTurnFunction"):
        assert (built / function / "app.py").exists(), function
    # The optional Strands layer is built whatever StrandsAgents will be (sam build ignores conditions).
    strands = built / "StrandsLayer" / "python"
    assert (strands / "strands" / "__init__.py").exists() and (strands / "opentelemetry").exists()
    assert not (strands / "resumable").exists() and not (layer / "strands").exists()
    # So is the app layer: without app/ it is a note (the demo's AgentFactory leaves it out of the stack).
    assert [p.name for p in (built / "AppLayer" / "python").iterdir()] == ["NO-APP.txt"]
    # The layer's own copy of the package imports (its compiled dependencies are for arm64: this
    # machine's stand in for them), and is the one imported.
    only_package = tmp_path / "path"
    only_package.mkdir()
    (only_package / "resumable").symlink_to(layer / "resumable")
    probe = "import resumable, resumable.api.app, resumable.web; print(resumable.__file__)"
    imported = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(only_package)},
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip().startswith(str(only_package)), imported.stdout


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
