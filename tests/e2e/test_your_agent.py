"""docs/your-agent.md, followed as a stranger would: every command of its bash blocks run in order, in a
copy of this project, offline. ``make deploy`` and the smoke test of a deployed stack need AWS: they are
run to their refusal without credentials, naming what is missing, and nothing is deployed."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.patience import HANG_SECONDS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "your-agent.md"
PROMPT = "Look an order up before you refund it."


def commands() -> list[str]:
    """Every command of the page's bash blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project as a team has it: its files (what git holds, and what it would), this project's .venv,
    a git repository of its own; AWS credentials nowhere."""
    root = tmp_path_factory.mktemp("yours") / "project"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)  # (times kept: make sees .venv as installed)
    (root / ".venv").symlink_to(ROOT / ".venv")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the bundle")
    return root


def _environment(root: Path) -> dict[str, str]:
    """A shell's environment in ``root``: its package (the copy's) first, no AWS credentials anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON", "RESUMABLE_", "MODEL_ID"))}
    nowhere = str(root / "no-aws")
    env |= {"AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere, "AWS_EC2_METADATA_DISABLED": "true"}
    env |= {"AWS_DEFAULT_REGION": "us-east-1", "PYTHONPATH": str(root / "shared"), "SAM_CLI_TELEMETRY": "0"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return env


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=_environment(root), check=True, timeout=HANG_SECONDS)


def _shell(root: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=root,
        env=_environment(root),
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )


@contextmanager
def make_run(project: Path) -> Iterator[int]:
    """``make run`` in the project, on a port of its own, until the block ends; its port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = project / "make-run.log"
    with log.open("w") as written:
        server = subprocess.Popen(
            ["make", "run", f"PORT={port}"], cwd=project, env=_environment(project), stdout=written, stderr=written
        )
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while "resumable is serving" not in log.read_text():
            assert server.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "make run never served (a hang)"
            time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(HANG_SECONDS)


@pytest.mark.slow
def test_every_command_of_the_page_does_what_the_page_says(project: Path) -> None:
    said = commands()
    assert said[:3] == ["make new-agent NAME=orders", "make test-app", "make run"], said
    outputs, port = {}, 0
    with ExitStack() as running:
        for command in said:
            if command == "make run":
                port = running.enter_context(make_run(project))  # (it serves while the next commands run)
                continue
            if command.startswith("make test-app && make deploy"):
                _change_the_refund_limit(project)
            outputs[command] = _followed(project, command.replace("127.0.0.1:3000", f"127.0.0.1:{port}"))
    assert "made app/" in outputs["make new-agent NAME=orders"]
    assert "5 passed" in outputs["make test-app"]
    [started] = [o for c, o in outputs.items() if c.startswith("curl")]
    assert '"status":"waiting"' in started and '"tool":"refund_order"' in started
    [smoked] = [o for c, o in outputs.items() if c.startswith("make smoke") and "--url" in c]
    assert "approved, completed, deleted" in smoked
    assert "output: refunded $89.50 to Grace for order A-1002" in smoked
    assert "StartTurn, SubmitApproval and Slack (StrandsAgents=false" in outputs["make layer"]
    app_layer = zipfile.ZipFile(project / "layers" / "app-layer.zip").namelist()
    assert "python/orders/agents.py" in app_layer and any(n.startswith("python/humanize/") for n in app_layer)
    assert "python/local.json" not in app_layer and not any(n.startswith("python/tests/") for n in app_layer)
    assert "predeploy: all 5 checks passed" in outputs["make predeploy"]
    assert "orders.agents:build_agents builds its agents" in outputs["make predeploy"]
    [updated] = [o for c, o in outputs.items() if c.startswith("make test-app && make deploy")]
    assert "5 passed" in updated and "make deploy: no usable AWS credentials" in updated
    assert f"{PROMPT} Be brief." not in (project / "app" / "orders" / "agents.py").read_text(), "the rollback"


def _followed(project: Path, command: str) -> str:
    """What ``command`` printed, run as the page says; the ones that need AWS refuse, naming what is missing."""
    ran = _shell(project, command)
    said = ran.stdout + ran.stderr
    if command.endswith("make deploy"):
        assert ran.returncode != 0, said
        assert "make deploy: no usable AWS credentials" in said and "nothing was deployed" in said, said[-3000:]
    elif command.startswith("make smoke") and "--url" not in command:
        assert ran.returncode != 0, said
        assert "smoke: FAILED: start a turn, until it asks or settles: the command exited" in said, said[-3000:]
    else:
        assert ran.returncode == 0, f"{command}:\n{said[-4000:]}"
    return said


def _change_the_refund_limit(project: Path) -> None:
    """The page's update: app/ committed as a team would, then a change to it, committed (its rollback
    reverts it)."""
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "our agents")
    agents = project / "app" / "orders" / "agents.py"
    agents.write_text(agents.read_text().replace(PROMPT, f"{PROMPT} Be brief."))
    _git(project, "commit", "-qam", "a briefer agent")
