"""Functions run from their built layers, as Lambda runs them (resumable.local.execution): each in an
execution environment of its own whose path holds its code, its layers built for this machine and the
runtime's boto3, and nothing of the project's virtual environment; their calls of other functions go
through the embedded AWS, which runs those from their layers too."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from layers.build import build_local
from resumable.local.execution import (
    ExecutionEnvironment,
    ExecutionEnvironments,
    FunctionError,
)
from resumable.local.functions import ROOT, Function
from tests.e2e.built import served_from_layers
from tests.e2e.local_api import call
from tests.patience import HANG_SECONDS, eventually

# An application whose agent says what its function could import: its reply is built in the factory.
PROBE = '''
import importlib.util, json, sys

import humanize
from resumable import Agent, ScriptedModel, tool


def found(module):
    spec = importlib.util.find_spec(module)
    return spec.origin if spec else None


@tool
def size(n: int) -> str:
    """A size in words.

    Args:
        n: bytes.
    """
    return humanize.naturalsize(n)


def build_agents():
    seen = {"path": sys.path, **{m: found(m) for m in ("moto", "pytest", "yaml", "humanize", "boto3", "resumable")}}
    return Agent(name="probe", model=ScriptedModel([{"role": "assistant", "content": [{"text": json.dumps(seen)}]}]))


def build_sizer():
    """Two tool calls: a run over its budget checkpoints before the second."""
    replies = [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": f"t{n}", "name": "size", "input": {"n": n}}}]}
        for n in (1024, 2048)
    ]
    replies.append({"role": "assistant", "content": [{"text": "sized"}]})
    return Agent(name="sizer", model=ScriptedModel(replies), tools=[size])


def build_with_yaml():
    import yaml  # in the project's environment, in no layer of this stack

    return build_agents()
'''


@pytest.fixture(scope="module")
def layers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    app = tmp_path_factory.mktemp("project") / "app"
    (app / "probe").mkdir(parents=True)
    (app / "probe" / "__init__.py").write_text("")
    (app / "probe" / "agents.py").write_text(PROBE)
    (app / "requirements.txt").write_text("humanize==4.17.0\n")
    return build_local(tmp_path_factory.mktemp("lambda"), app)


@pytest.fixture(scope="module")
def served(layers: dict[str, Path]) -> Iterator[tuple[str, ExecutionEnvironments]]:
    # (a PYTHONPATH in the local run's environment reaches no function: Lambda's python reads none of ours)
    with served_from_layers(
        layers, "built", AGENT_FACTORY="probe.agents:build_agents", PYTHONPATH="/not/lambda"
    ) as served:
        yield served


def _served_with(environments: ExecutionEnvironments, monkeypatch: pytest.MonkeyPatch, **variables: str) -> None:
    """New settings for the functions: their environments are made again (a deploy, in Lambda)."""
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)
    environments.stop()


@pytest.mark.slow
def test_a_function_run_from_its_layers_imports_from_its_code_its_layers_and_the_runtime_alone(
    served: tuple[str, ExecutionEnvironments], layers: dict[str, Path]
) -> None:
    url, _ = served
    status, turn = call(url, "POST", "/sessions/probe/turns", {"prompt": "what can you import?"})
    assert (status, turn["status"]) == (201, "completed"), turn
    seen = json.loads(turn["output"])
    shared, app, runtime = (str(layers[name]) for name in ("SharedLayer", "AppLayer", "runtime"))
    assert seen["path"][:3] == [str(ROOT / "functions" / "start_turn"), shared, app]
    assert seen["path"][-1] == runtime
    assert not [entry for entry in seen["path"] if "site-packages" in entry or str(ROOT / ".venv") in entry]
    assert "/not/lambda" not in seen["path"], "-I: the run's PYTHONPATH must not reach the function"
    assert seen["humanize"].startswith(app) and seen["resumable"].startswith(shared)
    assert seen["boto3"].startswith(runtime)
    pinned = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line.startswith("boto3==")]
    assert [
        f"boto3=={v.name.removeprefix('boto3-').removesuffix('.dist-info')}"
        for v in Path(runtime).glob("boto3-*.dist-info")
    ] == pinned, "the runtime's boto3 is the project's pin (layers/runtime-requirements.txt)"
    assert (seen["moto"], seen["pytest"], seen["yaml"]) == (None, None, None), "the project's environment leaked"


@pytest.mark.slow
def test_a_module_no_requirement_brings_fails_the_turn_here_as_it_would_in_lambda(
    served: tuple[str, ExecutionEnvironments], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML is in the project's environment, so the factory imports in-process; no layer ships it."""
    url, environments = served
    _served_with(environments, monkeypatch, AGENT_FACTORY="probe.agents:build_with_yaml")
    try:
        status, turn = call(url, "POST", "/sessions/yaml/turns", {"prompt": "hello"})
        assert (status, turn["status"]) == (201, "failed"), turn
        assert "the agent factory raised ModuleNotFoundError: No module named 'yaml'" in turn["error"]
    finally:
        monkeypatch.undo()
        environments.stop()


@pytest.mark.slow
def test_a_turn_over_its_time_budget_is_continued_by_submit_approval_invoked_through_the_embedded_aws(
    served: tuple[str, ExecutionEnvironments], monkeypatch: pytest.MonkeyPatch
) -> None:
    """StartTurn's process asks Lambda (the embedded AWS, over loopback) to run SubmitApproval, which
    runs in a process of its own and finishes the turn."""
    url, environments = served
    _served_with(environments, monkeypatch, AGENT_FACTORY="probe.agents:build_sizer", TURN_BUDGET_SECONDS="0")
    try:
        status, turn = call(url, "POST", "/sessions/long/turns", {"prompt": "size it"})
        assert (status, turn["status"]) == (201, "running"), turn

        def settled() -> dict[str, object] | None:
            read = call(url, "GET", f"/sessions/long/turns/{turn['turnId']}")[1]
            return read if read["status"] != "running" else None

        done = eventually(settled, "the continuation's settlement")
        assert (done["status"], done["output"]) == ("completed", "sized")
    finally:
        monkeypatch.undo()
        environments.stop()


# -- one execution environment -----------------------------------------------------------------------------

HANDLERS = """
import os, time

STARTED = os.getpid()


def echo(event, context):
    left = context.get_remaining_time_in_millis()
    return {"event": event, "pid": STARTED, "function": context.function_name, "left": left}


def sleepy(event, context):
    time.sleep(event["seconds"])
    return "woke"


def fails(event, context):
    raise KeyError("no such thing")


def unmarshalable(event, context):
    return {1, 2}


def too_large(event, context):
    return "x" * 7_000_000


def big_event(event, context):
    return len(event["data"])
"""


def _environment(
    tmp_path: Path, handler: str, source: str = HANDLERS, timeout: int = int(HANG_SECONDS)
) -> ExecutionEnvironment:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "app.py").write_text(source)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    return ExecutionEnvironment(Function("Probe", str(code), handler), [str(code), str(runtime)], timeout, 128)


@pytest.mark.slow
def test_an_environment_imports_its_handler_once_and_runs_invocations_one_after_another(tmp_path: Path) -> None:
    environment = _environment(tmp_path, "app.echo", timeout=int(HANG_SECONDS))  # (a busy machine's init is slow)
    try:
        first = environment.invoke({"n": 1}, None)
        second = environment.invoke({"n": 2}, None)
        assert first["event"] == {"n": 1} and second["event"] == {"n": 2}
        assert first["pid"] == second["pid"] == environment.process.pid != os.getpid()
        assert first["function"] == "Probe" and first["left"] <= HANG_SECONDS * 1000
    finally:
        environment.stop()


@pytest.mark.slow
def test_an_event_larger_than_a_pipe_holds_reaches_the_handler_whole(tmp_path: Path) -> None:
    environment = _environment(tmp_path, "app.big_event")
    try:
        assert environment.invoke({"data": "y" * 3_000_000}, None) == 3_000_000
    finally:
        environment.stop()


@pytest.mark.slow
def test_an_init_that_hangs_is_stopped_at_the_timeout_even_with_an_event_it_never_reads(tmp_path: Path) -> None:
    environment = _environment(tmp_path, "app.echo", source="import time\ntime.sleep(600)\n", timeout=1)
    with pytest.raises(FunctionError, match=r"Task timed out after 1\.00 seconds"):
        environment.invoke({"data": "z" * 1_000_000}, None)
    assert not environment.alive


@pytest.mark.slow
def test_an_invocation_past_the_functions_timeout_is_stopped_with_its_environment(tmp_path: Path) -> None:
    environment = _environment(tmp_path, "app.sleepy", timeout=1)
    with pytest.raises(FunctionError, match=r"Task timed out after 1\.00 seconds") as stopped:
        environment.invoke({"seconds": 600}, None)
    assert stopped.value.error_type == "Sandbox.Timedout"
    assert not environment.alive


@pytest.mark.slow
def test_failures_are_reported_as_lambda_reports_them(tmp_path: Path) -> None:
    for handler, error_type, said in (
        ("app.fails", "KeyError", "'no such thing'"),
        ("app.unmarshalable", "Runtime.MarshalError", "Unable to marshal response"),
        ("app.too_large", "Function.ResponseSizeTooLarge", "exceeded maximum allowed payload size (6291556 bytes)"),
        ("app.nowhere", "Runtime.HandlerNotFound", "Handler 'nowhere' missing on module 'app'"),
    ):
        environment = _environment(tmp_path, handler)
        try:
            with pytest.raises(FunctionError) as failed:
                environment.invoke({}, None)
            assert (failed.value.error_type, said in str(failed.value)) == (error_type, True)
            assert environment.alive, "a failed invocation leaves its environment for the next"
        finally:
            environment.stop()
    broken = _environment(tmp_path, "app.echo", source="import not_installed_anywhere\n")
    try:
        for _ in range(2):  # every invocation of an environment whose init failed says why
            with pytest.raises(FunctionError, match="Unable to import module 'app': No module named") as failed:
                broken.invoke({}, None)
            assert failed.value.error_type == "Runtime.ImportModuleError"
    finally:
        broken.stop()


def test_the_bootstrap_imports_the_standard_library_alone_before_it_sets_the_path() -> None:
    """Its module-level imports run before any path is set: anything else would be found nowhere in Lambda."""
    import ast

    tree = ast.parse((ROOT / "shared" / "resumable" / "local" / "lambda_bootstrap.py").read_text())
    imported = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)
