"""docs/your-agent.md, followed as a stranger would: every command of its bash blocks run in order, in a
copy of this project, offline. ``make deploy`` and the smoke test of a deployed stack need AWS: they are
run to their refusal without credentials, naming what is missing, and nothing is deployed."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.patience import HANG_SECONDS, eventually

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "your-agent.md"
PROMPT = "Look an order up before you refund it."


def commands() -> list[str]:
    """Every command of the page's bash blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def _copy(root: Path) -> Path:
    """This project as a newcomer has it, at ``root``: its files (what git holds, and what it would) but an
    app/ of its own and the overrides samconfig.toml holds, this project's .venv, a git repository of its
    own; AWS credentials nowhere."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file() and not name.startswith("app/"):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)  # (times kept: make sees .venv as installed)
    (root / ".venv").symlink_to(ROOT / ".venv")
    config = root / "samconfig.toml"
    config.write_text(
        "".join(line for line in config.read_text().splitlines(True) if "parameter_overrides" not in line)
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the bundle")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _copy(tmp_path / "project")


def _environment(root: Path) -> dict[str, str]:
    """A shell's environment in ``root``: its package (the copy's) first, no AWS credentials anywhere."""
    dropped = ("AWS_", "PYTHON", "RESUMABLE_", "MODEL_ID", "AGENT_FACTORY", "MAKE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    nowhere = str(root / "no-aws")
    env |= {"AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere, "AWS_EC2_METADATA_DISABLED": "true"}
    env |= {"AWS_DEFAULT_REGION": "us-east-1", "PYTHONPATH": str(root / "shared"), "SAM_CLI_TELEMETRY": "0"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    # What make would otherwise remake from the copy's files into this project's shared .venv (an
    # editable install pointing at the copy): taken as made, whatever the copy's file times say.
    made = [".venv/.installed-run", ".venv/.installed-dev", ".venv/sam/bin/sam", ".venv/checkov/bin/checkov"]
    env["MAKEFLAGS"] = " ".join(f"-o {target}" for target in [*made, ".venv/load/bin/locust", "/usr/bin/chromium"])
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
    """``make run`` in the project, on a free port it picks itself (``PORT=0``: a port probed here and
    handed over could be taken in between), until the block ends; its port."""
    log = project / "make-run.log"
    with log.open("w") as written:  # (a session of its own: make's child, the server, is stopped with it)
        server = subprocess.Popen(
            ["make", "run", "PORT=0"],
            cwd=project,
            env=_environment(project),
            stdout=written,
            stderr=written,
            start_new_session=True,
        )
    try:

        def serving() -> int | None:
            assert server.poll() is None, log.read_text()[-3000:]
            said = re.search(r"resumable is serving http://127\.0\.0\.1:(\d+)", log.read_text())
            return int(said.group(1)) if said else None

        yield eventually(serving, "make run's serving")
    finally:
        with contextlib.suppress(ProcessLookupError):  # (when make run had already ended: its log says why)
            os.killpg(server.pid, signal.SIGTERM)  # (as Ctrl-C reaches make and the server alike)
        try:
            server.wait(HANG_SECONDS)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)  # (whatever of it outlived make)


def _halves() -> tuple[list[str], list[str]]:
    """The page's commands up to ``make layer`` (on this machine), and from it (towards AWS): each half
    is followed in a project of its own (the second after ``make new-agent``), so that both run at once."""
    said = commands()
    assert said[:3] == ["make new-agent NAME=orders", "make test-app", "make run"], said
    return said[: said.index("make layer")], [said[0], *said[said.index("make layer") :]]


def _follow(project: Path, said: list[str]) -> dict[str, str]:
    """Each command followed in order; what each printed."""
    outputs, port = {}, 0
    with ExitStack() as running:
        for command in said:
            if command == "make run":
                port = running.enter_context(make_run(project))  # (it serves while the next commands run)
                continue
            if command.startswith("make test-app && make deploy"):
                _change_the_agent(project)
            outputs[command] = _followed(project, command.replace("127.0.0.1:3000", f"127.0.0.1:{port}"))
    return outputs


@pytest.mark.slow
def test_the_page_from_make_new_agent_to_make_run_and_its_smoke_test(project: Path) -> None:
    outputs = _follow(project, _halves()[0])
    assert "made app/" in outputs["make new-agent NAME=orders"]
    assert "5 passed" in outputs["make test-app"]
    [started] = [o for c, o in outputs.items() if c.startswith("curl")]
    assert '"status":"waiting"' in started and '"tool":"refund_order"' in started
    [smoked] = [o for c, o in outputs.items() if c.startswith("make smoke")]
    assert "approved, completed, deleted" in smoked
    assert "output: refunded $89.50 to Grace for order A-1002" in smoked


@pytest.mark.slow
def test_the_page_from_make_layer_to_a_rollback(project: Path) -> None:
    outputs = _follow(project, _halves()[1])
    assert "StartTurn, SubmitApproval and Slack (StrandsAgents=false" in outputs["make layer"]
    app_layer = zipfile.ZipFile(project / "layers" / "app-layer.zip").namelist()
    assert "python/orders/agents.py" in app_layer and any(n.startswith("python/humanize/") for n in app_layer)
    assert "python/local.json" not in app_layer and not any(n.startswith("python/tests/") for n in app_layer)
    assert "predeploy: all 5 checks passed" in outputs["make predeploy"]
    assert "orders.agents:build_agents builds its agents" in outputs["make predeploy"]
    sam_built(project / ".aws-sam" / "build")
    [updated] = [o for c, o in outputs.items() if c.startswith("make test-app && make deploy")]
    assert "5 passed" in updated and "make deploy: no usable AWS credentials" in updated
    assert f"{PROMPT} Be brief." not in (project / "app" / "orders" / "agents.py").read_text(), "the rollback"


def sam_built(built: Path) -> None:
    """What sam build built (make predeploy's): every function; the layer, without local-only code or boto3,
    whose own package imports from it alone; the Strands layer (sam build ignores conditions), the app layer."""
    for function in ("StartTurnFunction", "SubmitApprovalFunction", "CancelFunction", "GetTurnFunction"):
        assert (built / function / "app.py").exists(), function
    layer = built / "SharedLayer" / "python"
    assert (layer / "resumable" / "web" / "inbox.html").exists()
    assert not (layer / "resumable" / "local").exists() and not (layer / "resumable" / "cli").exists()
    assert not (layer / "boto3").exists()
    strands = built / "StrandsLayer" / "python"
    assert (strands / "strands" / "__init__.py").exists() and (strands / "opentelemetry").exists()
    assert not (strands / "resumable").exists() and not (layer / "strands").exists()
    app = built / "AppLayer" / "python"
    assert (app / "orders" / "agents.py").exists() and (app / "humanize").exists() and not (app / "pydantic").exists()
    assert any(p.name.endswith("-aarch64-linux-gnu.so") for p in (layer / "pydantic_core").iterdir()), "for arm64"
    # The layer's own copy of the package imports (its compiled dependencies are for arm64: this
    # machine's stand in for them), and is the one imported.
    only_package = built.parent / "only-package"
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


def _change_the_agent(project: Path) -> None:
    """The page's update: app/ committed as a team would, then a change to it, committed (its rollback
    reverts it)."""
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "our agents")
    agents = project / "app" / "orders" / "agents.py"
    agents.write_text(agents.read_text().replace(PROMPT, f"{PROMPT} Be brief."))
    _git(project, "commit", "-qam", "a briefer agent")


@pytest.mark.slow
def test_make_run_says_at_its_start_what_the_application_lacks(project: Path) -> None:
    """A package app/requirements.txt lacks: make run says so as it starts, naming the file to add it to,
    rather than at the first turn."""
    _followed(project, "make new-agent NAME=orders")
    (project / "app" / "requirements.txt").write_text("# humanize forgotten\n")
    with make_run(project):
        said = (project / "make-run.log").read_text()
    assert (
        "make run: every turn will fail until this is mended: orders/agents.py (in the app layer) imports humanize, "
        "which none of the places it was looked for has (its code, the resumable layer, the app layer, the Lambda "
        "runtime): add it to app/requirements.txt"
    ) in said, said[-3000:]
