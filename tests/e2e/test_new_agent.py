"""make new-agent's application, as a team starts from it: written into a project of its own, its test
green against its layer built for this machine, and served by the local API with every function run
from its layers. Its dependency (humanize) is in no environment of this project: only a working build
can import it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from layers.build import build_local, stack_parameters
from resumable.local.app_values import LocalValues
from resumable.local.application import application
from resumable.local.execution import ExecutionEnvironments
from tests.e2e.built import served_from_layers
from tests.e2e.local_api import call
from tests.patience import HANG_SECONDS
from tools.new_agent import main as new_agent

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with make new-agent's app/ (package ``orders``), and this project's samconfig.toml."""
    root = tmp_path_factory.mktemp("project")
    shutil.copy(ROOT / "samconfig.toml", root / "samconfig.toml")
    assert new_agent(["--name", "orders", "--into", str(root)]) == 0
    return root


@pytest.fixture(scope="module")
def layers(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_local(tmp_path_factory.mktemp("lambda"), project / "app")


def test_the_dependency_of_the_example_is_in_no_environment_of_this_project() -> None:
    assert importlib.util.find_spec("humanize") is None, "then a broken build could pass: pick another dependency"


def test_new_agent_writes_a_package_its_requirements_and_its_test_and_names_its_factory(project: Path) -> None:
    app = project / "app"
    assert sorted(str(p.relative_to(app)) for p in app.rglob("*") if p.is_file()) == [
        "local.json",
        "orders/__init__.py",
        "orders/agents.py",
        "requirements.txt",
        "tests/test_agents.py",
    ]
    assert "my_agent" not in "".join(p.read_text() for p in app.rglob("*.py"))
    assert "from orders.agents import build_agents" in (app / "tests" / "test_agents.py").read_text()
    assert stack_parameters(project / "samconfig.toml")["AgentFactory"] == "orders.agents:build_agents"
    found = application({}, app, project / "samconfig.toml")
    assert found is not None and (found.factory, found.strands) == ("orders.agents:build_agents", False)


def test_new_agent_writes_nothing_over_an_app_nor_under_a_name_that_is_not_a_package(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (project / "app" / "orders" / "agents.py").read_text()
    assert new_agent(["--name", "other", "--into", str(project)]) == 1
    assert "exists already: nothing was written" in capsys.readouterr().err
    assert (project / "app" / "orders" / "agents.py").read_text() == before
    for name in ("Orders", "2fast", "class", "pydantic", "boto3", "json", "resumable"):
        assert new_agent(["--name", name, "--into", str(tmp_path)]) == 1, name
        assert not (tmp_path / "app").exists()
    assert "is not a package name" in capsys.readouterr().err


@pytest.mark.slow
def test_the_new_agents_test_passes_against_its_layer_built_for_this_machine(
    project: Path, layers: dict[str, Path]
) -> None:
    """As make test-app runs it: the package and humanize come from the built app layer alone."""
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project / "app" / "tests")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(layers["AppLayer"])},
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "5 passed" in ran.stdout


@pytest.fixture(scope="module")
def served(project: Path, layers: dict[str, Path]) -> Iterator[tuple[str, ExecutionEnvironments]]:
    """As make run serves it: its secret and settings from its app/local.json, in the embedded AWS."""
    values = LocalValues.read(project / "app" / "local.json")
    with served_from_layers(layers, "orders", values, AGENT_FACTORY="orders.agents:build_agents") as served:
        yield served


@pytest.mark.slow
def test_the_new_agent_served_from_its_layers_asks_before_a_refund_and_refunds_once_approved(
    served: tuple[str, ExecutionEnvironments],
) -> None:
    url, _ = served
    status, turn = call(url, "POST", "/sessions/orders-1/turns", {"prompt": "refund order A-1001, it arrived broken"})
    assert (status, turn["status"]) == (201, "waiting"), turn
    [question] = turn["interactions"]
    assert question["reason"]["tool"] == "refund_order" and question["reason"]["risk"] == "destructive"
    path = f"/sessions/orders-1/turns/{turn['turnId']}/interactions/{question['requestId']}"
    status, done = call(url, "POST", path, {"response": {"decision": "approve"}})
    assert (status, done["status"], done["output"]) == (200, "completed", "refunded $1,250.00 to Ada for order A-1001")
    status, looked = call(url, "POST", "/sessions/orders-2/turns", {"prompt": "where is order A-1002?"})
    assert (status, looked["status"], looked["interactions"]) == (201, "completed", [])
    assert looked["output"] == "order A-1002: Grace, $89.50, shipped, placed a day ago"


def test_make_run_with_an_app_and_no_factory_of_its_own_says_what_to_set(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "samconfig.toml").write_text(
        '[default.deploy.parameters]\nparameter_overrides = "StrandsAgents=true"\n'
    )
    with pytest.raises(SystemExit, match="no agent factory of its own is named") as stopped:
        application({}, tmp_path / "app", tmp_path / "samconfig.toml")
    assert "AGENT_FACTORY=package.module:function" in str(stopped.value)
    named = application({"AGENT_FACTORY": "mine.agents:build"}, tmp_path / "app", tmp_path / "samconfig.toml")
    assert named is not None and (named.factory, named.from_, named.strands) == (
        "mine.agents:build",
        "AGENT_FACTORY",
        True,
    )
    assert application({}, tmp_path / "nothing", tmp_path / "samconfig.toml") is None


@pytest.mark.slow
def test_make_smoke_takes_the_new_agents_turn_from_its_prompt_to_its_settlement(
    served: tuple[str, ExecutionEnvironments],
) -> None:
    url, _ = served
    smoke = [sys.executable, str(ROOT / "tools" / "smoke.py"), "--url", url, "--prompt", "refund order A-1002"]
    ran = subprocess.run(smoke, capture_output=True, text=True, timeout=HANG_SECONDS, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "waits (destructive), for " in ran.stdout and "input: refund_order" not in ran.stdout
    assert 'refund_order {"order_id": "A-1002"}' in ran.stdout, "the question, as the desk prints it"
    assert "output: refunded $89.50 to Grace for order A-1002" in ran.stdout
    assert "smoke: passed in " in ran.stdout and "approved, completed, deleted" in ran.stdout
