"""Importing resumable must not import boto3: it stays out of cold starts until a model or store needs it.
Nor the optional extras' SDKs (resumable[openai], resumable[mcp], resumable[strands]): neither resumable
nor a Lambda handler imports them until an OpenAIModel first calls its server or an MCPClient starts, and
the Strands Agents SDK only when an app's own code imports it (its layer is optional: a stack without it
must run).

Each check runs in a fresh interpreter, since this test process has long since imported both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.patience import HANG_SECONDS

pytestmark = pytest.mark.slow  # (each check starts an interpreter: about 12 CPU-s, kept out of make test-fast)

REPORT_MODULES = """
import json, sys
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {roots!r})))
"""
AWS = ("boto3", "botocore")
# The MCP SDK and what only it brings in.
MCP = ("mcp", "mcp_types", "httpx2", "starlette", "uvicorn")
# The openai SDK, the HTTP clients it runs on (httpx2 today, httpx before it) and their own dependencies.
OPENAI = ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "h11", "jiter", "anyio", "sniffio", "truststore")
# The Strands Agents SDK and what it imports that resumable does not (OpenTelemetry, which the MCP SDK
# imports too, among them).
STRANDS = ("strands", "opentelemetry", "docstring_parser", "watchdog")
HANDLERS = sorted((Path(__file__).resolve().parents[2] / "functions").glob("*/app.py"))
# Imports every Lambda handler's module (functions/*/app.py) as Lambda does, by its file.
IMPORT_EVERY_HANDLER = f"""
import importlib.util
for n, path in enumerate({[str(h) for h in HANDLERS]!r}):
    spec = importlib.util.spec_from_file_location(f"handler_{{n}}", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
"""


@pytest.fixture(scope="module")
def offline_aws_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment with fake credentials and a region, no profile or config files, no metadata service."""
    tmp_path = tmp_path_factory.mktemp("offline")
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        AWS_DEFAULT_REGION="us-east-1",
        AWS_ACCESS_KEY_ID="x",
        AWS_SECRET_ACCESS_KEY="x",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "no-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-credentials"),
    )
    return env


def aws_modules_after(code: str, env: dict[str, str]) -> list[str]:
    """The boto3 and botocore modules loaded after running ``code`` in a fresh interpreter."""
    return modules_after(code, env, AWS)


def modules_after(code: str, env: dict[str, str], roots: tuple[str, ...]) -> list[str]:
    """The modules of the packages ``roots`` loaded after running ``code`` in a fresh interpreter."""
    modules: list[str] = printed_by(textwrap.dedent(code) + REPORT_MODULES.format(roots=roots), env)
    return modules


def printed_by(code: str, env: dict[str, str]) -> Any:
    """What ``code``, run in a fresh interpreter, printed last, read as JSON."""
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


# Every package the checks below look for, so that one fresh interpreter serves all of them.
WATCHED = ("resumable", *AWS, *MCP, *OPENAI, *STRANDS)


@pytest.fixture(scope="module")
def after_importing_resumable(offline_aws_env: dict[str, str]) -> list[str]:
    """The modules of ``WATCHED`` loaded by importing resumable and its runtime, in a fresh interpreter."""
    return modules_after("import resumable, resumable.runtime", offline_aws_env, WATCHED)


@pytest.fixture(scope="module")
def after_importing_every_handler(offline_aws_env: dict[str, str]) -> list[str]:
    """The modules of ``WATCHED`` loaded by importing every Lambda handler, in a fresh interpreter."""
    assert len(HANDLERS) >= 6
    return modules_after(IMPORT_EVERY_HANDLER, offline_aws_env, WATCHED)


def of(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in roots]


def test_importing_resumable_does_not_import_boto3_or_botocore(after_importing_resumable: list[str]) -> None:
    assert of(after_importing_resumable, AWS) == []


def test_constructing_bedrock_model_without_client_does_not_import_boto3(offline_aws_env: dict[str, str]) -> None:
    code = """
    import resumable
    model = resumable.BedrockModel("some-model", max_tokens=16)
    assert model.model_id == "some-model"
    """
    assert aws_modules_after(code, offline_aws_env) == []


def test_using_the_client_of_bedrock_model_builds_a_bedrock_runtime_client_without_boto3(
    offline_aws_env: dict[str, str],
) -> None:
    code = """
    import resumable
    model = resumable.BedrockModel("some-model")
    client = model.client
    assert client.meta.service_model.service_name == "bedrock-runtime", client.meta.service_model.service_name
    assert client.meta.region_name == "us-east-1", client.meta.region_name
    assert model.client is client
    """
    modules = aws_modules_after(code, offline_aws_env)
    assert "botocore" in modules
    assert [m for m in modules if m.split(".")[0] == "boto3"] == []


# -- the MCP SDK -------------------------------------------------------------------------------------------


def test_importing_resumable_does_not_import_the_mcp_sdk(after_importing_resumable: list[str]) -> None:
    assert of(after_importing_resumable, MCP) == []


def test_making_mcp_clients_does_not_import_the_mcp_sdk(offline_aws_env: dict[str, str]) -> None:
    code = """
    from resumable.runtime.mcp import MCPClient
    MCPClient.stdio("records-server", ["--fast"], env={"TOKEN": "x"})
    MCPClient.http("https://mcp.example.com/mcp", headers={"authorization": "Bearer x"})
    """
    assert modules_after(code, offline_aws_env, MCP) == []


def test_importing_every_lambda_handler_does_not_import_the_mcp_sdk(after_importing_every_handler: list[str]) -> None:
    assert of(after_importing_every_handler, MCP) == []


def test_starting_an_mcp_client_imports_the_mcp_sdk(offline_aws_env: dict[str, str]) -> None:
    """The check above sees the SDK when it is there: a client that starts (and fails to connect) loads it."""
    code = """
    from resumable.exceptions import MCPServerError
    from resumable.runtime.mcp import MCPClient
    try:
        MCPClient.stdio("/nonexistent/records-server").start()
    except MCPServerError:
        pass
    """
    loaded = modules_after(code, offline_aws_env, MCP)
    assert "mcp" in loaded
    assert "mcp_types" in loaded


# -- the openai SDK ----------------------------------------------------------------------------------------


def test_importing_resumable_does_not_import_the_openai_sdk_nor_openai_model(
    after_importing_resumable: list[str],
) -> None:
    assert of(after_importing_resumable, OPENAI) == []
    assert "resumable.runtime.chat_completions" not in after_importing_resumable


def test_importing_and_constructing_openai_model_does_not_import_the_openai_sdk(
    offline_aws_env: dict[str, str],
) -> None:
    code = """
    from resumable import OpenAIModel
    from resumable.runtime import OpenAIModel as same
    model = OpenAIModel("gpt-4.1-mini", base_url="http://127.0.0.1:1/v1", api_key="unused", temperature=0)
    assert same is OpenAIModel and model.params == {"temperature": 0}
    """
    assert modules_after(code, offline_aws_env, OPENAI) == []


def test_the_first_use_of_openai_models_client_imports_the_sdk_with_its_retries_off(
    offline_aws_env: dict[str, str],
) -> None:
    code = """
    from resumable import OpenAIModel
    model = OpenAIModel("gpt-4.1-mini", base_url="http://127.0.0.1:1/v1", api_key="unused")
    client = model.client
    assert (client.max_retries, str(client.base_url)) == (0, "http://127.0.0.1:1/v1/"), client.base_url
    assert model.client is client
    """
    assert "openai" in modules_after(code, offline_aws_env, OPENAI)


def test_importing_every_lambda_handler_does_not_import_the_openai_sdk(
    after_importing_every_handler: list[str],
) -> None:
    assert of(after_importing_every_handler, OPENAI) == []


# -- the Strands Agents SDK --------------------------------------------------------------------------------


def test_importing_resumable_does_not_import_the_strands_sdk(after_importing_resumable: list[str]) -> None:
    assert of(after_importing_resumable, STRANDS) == []


def test_importing_every_lambda_handler_does_not_import_the_strands_sdk(
    after_importing_every_handler: list[str],
) -> None:
    """A stack deployed without the optional Strands layer (StrandsAgents=false) has no strands to import."""
    assert of(after_importing_every_handler, STRANDS) == []


def test_importing_the_strands_sdk_is_seen_by_the_checks_above(offline_aws_env: dict[str, str]) -> None:
    loaded = modules_after("import strands", offline_aws_env, STRANDS)
    assert {"strands", "opentelemetry"} <= {m.split(".")[0] for m in loaded}


# -- the resumable command ---------------------------------------------------------------------------------


def test_the_resumable_command_loads_neither_the_agent_runtime_nor_pydantic(offline_aws_env: dict[str, str]) -> None:
    """A person waits for the command on every call: it imports what it uses (its HTTP client), not the
    package's agent runtime, which ``import resumable`` leaves unloaded until a name of it is used."""
    loaded = modules_after("import resumable.cli.main", offline_aws_env, ("resumable", "pydantic", *AWS))
    assert [m for m in loaded if not m.startswith("resumable.cli")] == ["resumable"]


def test_every_public_name_of_resumable_is_listed_and_imports_from_the_package(offline_aws_env: dict[str, str]) -> None:
    """The public names load on first use, yet a fresh ``import resumable`` lists them (``dir``, the REPL's
    completion) and each comes from the package; a name it does not have is an AttributeError naming it."""
    code = """
    import resumable
    missing = [name for name in resumable.__all__ if name not in dir(resumable)]
    assert missing == [], missing
    for name in resumable.__all__:
        exec(f"from resumable import {name}")
    try:
        resumable.Agnet
    except AttributeError as error:
        assert "'Agnet'" in str(error), error
    else:
        raise AssertionError("resumable.Agnet did not raise")
    """
    modules_after(code, offline_aws_env, ())


# -- a handler's init --------------------------------------------------------------------------------------

GC_AFTER_EVERY_HANDLER = (
    IMPORT_EVERY_HANDLER.replace("for n, path", "import gc\nstats = []\nfor n, path")
    + """
    stats.append([gc.isenabled(), gc.get_freeze_count(), gc.get_stats()[2]["collections"]])
import json
print(json.dumps(stats))
"""
)


def gc_after_every_handler(env: dict[str, str]) -> list[list[Any]]:
    """For each handler imported in turn in one fresh interpreter: whether the collector is on after it,
    how many objects are frozen, and how many full collections have run so far."""
    stats: list[list[Any]] = printed_by(GC_AFTER_EVERY_HANDLER, env)
    return stats


def test_in_lambda_a_handlers_init_runs_no_full_collection_and_freezes_what_it_made(
    offline_aws_env: dict[str, str],
) -> None:
    """CPython would walk every object the init made, in the middle of it (resumable.api.lambda_init)."""
    stats = gc_after_every_handler({**offline_aws_env, "LAMBDA_TASK_ROOT": str(HANDLERS[0].parents[2])})
    assert [enabled for enabled, _, _ in stats] == [True] * len(HANDLERS)
    assert [full for _, _, full in stats] == [0] * len(HANDLERS)
    assert stats[0][1] > 50_000  # boto3's, pydantic's, Powertools' and resumable's objects, out of every collection


def test_outside_lambda_importing_a_handler_leaves_the_collector_as_it_was(offline_aws_env: dict[str, str]) -> None:
    """The local API and the tests import handlers beside other work: nothing of theirs is frozen."""
    stats = gc_after_every_handler({k: v for k, v in offline_aws_env.items() if k != "LAMBDA_TASK_ROOT"})
    assert [(enabled, frozen) for enabled, frozen, _ in stats] == [(True, 0)] * len(HANDLERS)


def test_a_handler_that_runs_no_agent_does_not_load_the_agent_loop_at_init(offline_aws_env: dict[str, str]) -> None:
    """GetTurn and Cancel read and settle turns; the loop, the tools and the models are not theirs to load."""
    loop = {
        "resumable.runtime.agent",
        "resumable.runtime.tools",
        "resumable.runtime.models",
        "resumable.service.advancing.advance",
    }
    for name in ("get_turn", "cancel"):
        code = IMPORT_EVERY_HANDLER.replace(
            repr([str(h) for h in HANDLERS]), repr([str(h) for h in HANDLERS if h.parent.name == name])
        )
        loaded = set(modules_after(code, offline_aws_env, ("resumable",)))
        assert "resumable.api.app" in loaded, name
        assert loaded & loop == set(), name


ASIDE_MODULES = ("resumable.api.operator_routes", "resumable.service.audit.trail")
# Three requests to one handler's process: a turn's, the audit trail's, the turn's again. Each is refused
# by the query parameter it should not have, after its route is found (the route's own words say so).
A_TURNS_ROUTE_THEN_AN_ASIDE_ONE = f"""
import json, sys
from resumable.api.app import handle
from resumable.local.functions import LambdaContext
def event(route, path):
    return {{"version": "2.0", "routeKey": route, "rawPath": path, "rawQueryString": "nosuch=1",
            "queryStringParameters": {{"nosuch": "1"}}, "headers": {{}},
            "requestContext": {{"http": {{"method": route.split()[0], "path": path}}, "stage": "$default"}},
            "isBase64Encoded": False}}
turn = event("GET /sessions/{{sessionId}}/turns/{{turnId}}", "/sessions/s/turns/t")
audit = event("GET /audit", "/audit")
seen = []
for request in (turn, audit, turn):
    reply = handle(request, LambdaContext("GetTurn", "r1"))
    loaded = [m for m in {ASIDE_MODULES!r} if m in sys.modules]
    seen.append([reply["statusCode"], json.loads(reply["body"])["message"], loaded])
print(json.dumps(seen))
"""


def test_a_turns_first_request_leaves_the_aside_routes_unloaded_until_one_is_asked_for(
    offline_aws_env: dict[str, str],
) -> None:
    """The audit trail's, the operator's and the decision links' routes and models are no part of a cold
    start on a turn's route (resumable.api.app.ASIDE_PATHS); the first request for one adds them."""
    env = {**offline_aws_env, "RESUMABLE_TABLE": "turns", "RESUMABLE_BUCKET": "snapshots"}
    (turn, turn_loaded), (audit, audit_loaded), (again, _) = [
        (f"{status} {message}", loaded) for status, message, loaded in printed_by(A_TURNS_ROUTE_THEN_AN_ASIDE_ONE, env)
    ]
    refused = "422 query parameter 'nosuch' is not one this route takes"
    assert turn == again == f"{refused} (it takes: none); nothing was done"
    assert turn_loaded == []
    assert audit.startswith(f"{refused} (it takes: cursor, limit, ")
    assert audit_loaded == list(ASIDE_MODULES)


def test_the_runtime_loads_each_name_on_first_use(offline_aws_env: dict[str, str]) -> None:
    code = """
    import resumable.runtime.rules
    import sys
    assert "resumable.runtime.agent" not in sys.modules
    import resumable.runtime
    missing = [name for name in resumable.runtime.__all__ if name not in dir(resumable.runtime)]
    assert missing == [], missing
    from resumable.runtime import Agent, tool
    assert Agent.__module__ == "resumable.runtime.agent" and callable(tool)
    try:
        resumable.runtime.Agnet
    except AttributeError as error:
        assert "'Agnet'" in str(error), error
    else:
        raise AssertionError("resumable.runtime.Agnet did not raise")
    """
    modules_after(code, offline_aws_env, ())


def test_the_store_builds_no_exception_classes(offline_aws_env: dict[str, str]) -> None:
    """botocore builds one class per error of DynamoDB's model on first use of ``client.exceptions`` (and
    without a lock: two threads can get two classes); the store tells a refusal by its code instead."""
    code = """
    from resumable.config import Settings
    from resumable.store.dynamodb import DynamoDBStore
    store = DynamoDBStore(Settings(table_name="t", bucket_name="b"))
    assert store.dynamodb._exceptions is None  # (botocore's cache of them)
    """
    modules_after(code, offline_aws_env, ())


def test_resumables_clients_come_without_boto3(offline_aws_env: dict[str, str]) -> None:
    """botocore's clients, from one session: boto3 would import s3transfer and multiprocessing with it."""
    code = """
    from resumable.aws.clients import client, session
    from resumable.config import Settings
    settings = Settings(table_name="t", bucket_name="b")
    made = [client(service, settings) for service in ("dynamodb", "s3", "lambda", "stepfunctions")]
    assert {c.meta.service_model.service_name for c in made} == {"dynamodb", "s3", "lambda", "stepfunctions"}
    assert client("s3", settings) is not made[1] and session() is session()
    """
    loaded = modules_after(code, offline_aws_env, ("boto3", "s3transfer", "multiprocessing", "botocore"))
    assert "botocore" in loaded
    assert [m for m in loaded if m.split(".")[0] != "botocore"] == []


def test_an_init_that_fails_leaves_the_collector_on_and_nothing_frozen(offline_aws_env: dict[str, str]) -> None:
    code = """
    import gc
    from resumable.api import lambda_init
    try:
        with lambda_init.quiet():
            assert not gc.isenabled()
            raise RuntimeError("a bad setting")
    except RuntimeError:
        pass
    assert gc.isenabled() and gc.get_freeze_count() == 0
    """
    modules_after(code, {**offline_aws_env, "LAMBDA_TASK_ROOT": "/var/task"}, ())
