"""``sam build`` of the sample durable workflow (template.yaml's ApprovalDurableFunction, built by
workflows/durable_approval/Makefile): its handler, shared/resumable without the code that never ships
(as the layer leaves it out), and workflows/durable_approval/requirements.txt installed for Lambda's
python3.13 on arm64, a durable function's runtime (the layers are python3.11's, so the sample takes
none of them). No bytecode ships: the Python that builds (3.11) cannot write 3.13's.

This module uses the standard library only: ``sam build`` may run it with any python3.11.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from layers.build import ROOT, SHARED, not_shipped
from layers.checks import check_limit, size
from layers.provided import shown

SAMPLE = ROOT / "workflows" / "durable_approval"
REQUIREMENTS = SAMPLE / "requirements.txt"
RUNTIME = "3.13"


def build(artifacts: Path) -> None:
    """The sample's package in ``artifacts`` (its handler at the top, as Lambda imports it)."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    command += ["--only-binary=:all:", "--platform", "manylinux2014_aarch64", "--implementation", "cp"]
    command += ["--python-version", RUNTIME, "--no-deps", "--target", str(artifacts), "-r", str(REQUIREMENTS)]
    if subprocess.run(command, check=False).returncode != 0:
        raise SystemExit(
            f"pip could not install {shown(REQUIREMENTS)} for Lambda's python{RUNTIME} on arm64 (it said why above): "
            "the sample durable workflow was not built"
        )
    shutil.copytree(SHARED.package, artifacts / "resumable", ignore=not_shipped, dirs_exist_ok=True)
    shutil.copy2(SAMPLE / "app.py", artifacts / "app.py")
    check_limit({"the sample durable workflow": size(artifacts)})


if __name__ == "__main__":
    build(Path(sys.argv[1]))
