"""Tracing: every handler, run as Lambda runs it with active tracing, sends X-Ray its invocation with
each AWS SDK call as a subsegment (and no response: a Turn's prompts and outputs stay out of traces);
with tracing disabled it sends nothing. An X-Ray daemon is stood in for by a UDP socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from typing import Any

import pytest

from resumable.config import Settings
from resumable.local.functions import ROOT
from tests.patience import HANG_SECONDS

pytestmark = pytest.mark.slow

_INVOKE = """
import importlib.util, json, sys
from types import SimpleNamespace
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
context = SimpleNamespace(function_name="GetTurnFunction", aws_request_id="r-1", memory_limit_in_mb=512,
                          invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:GetTurnFunction",
                          get_remaining_time_in_millis=lambda: 29_000)
reply = module.lambda_handler(json.loads(sys.argv[2]), context)
print(reply["statusCode"])
"""


def _traced(
    settings: Settings,
    disabled: bool,
    turn: tuple[str, str] | None = None,
    sample: str = "get_turn.json",
    **environment: str,
) -> tuple[int, list[dict[str, Any]]]:
    """The reply's status of GetTurn to a read of ``turn`` (session, turn id; the sample event's, which
    does not exist, by default), or to another ``sample`` event of its routes, and what reached the
    daemon's address."""
    daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    daemon.bind(("127.0.0.1", 0))
    event = json.loads((ROOT / "events" / sample).read_text())
    if turn is not None:
        session, turn_id = turn
        event["pathParameters"] = {"sessionId": session, "turnId": turn_id}
        event["rawPath"] = event["requestContext"]["http"]["path"] = f"/sessions/{session}/turns/{turn_id}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "AWS_XRAY"))},
        **settings.environment(),
        "LAMBDA_TASK_ROOT": str(ROOT),
        "AWS_LAMBDA_FUNCTION_NAME": "GetTurnFunction",
        "_X_AMZN_TRACE_ID": "Root=1-674d0000-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1",
        "AWS_XRAY_DAEMON_ADDRESS": f"127.0.0.1:{daemon.getsockname()[1]}",
        "POWERTOOLS_TRACE_DISABLED": "true" if disabled else "false",
        **environment,
    }
    ran = subprocess.run(
        [sys.executable, "-c", _INVOKE, str(ROOT / "functions" / "get_turn" / "app.py"), json.dumps(event)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    # The handler has exited: what it sent is in the socket's buffer (loopback), read until a short
    # silence, not a long one.
    daemon.settimeout(0.25)
    documents: list[dict[str, Any]] = []
    try:
        while True:
            datagram = daemon.recv(65536).decode()
            documents.append(json.loads(datagram.split("\n", 1)[1]))  # '{"format": ...}\n{document}'
    except TimeoutError:
        pass
    finally:
        daemon.close()
    return int(ran.stdout.strip().splitlines()[-1]), documents


def _names(documents: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []

    def walk(node: dict[str, Any]) -> None:
        found.append((node["name"], node.get("namespace")))
        for child in node.get("subsegments", []):
            walk(child)

    for document in documents:
        walk(document)
    return found


def test_a_handler_sends_its_invocation_and_its_aws_calls_to_x_ray(handler_environment: Settings) -> None:
    status, documents = _traced(handler_environment, disabled=False)
    assert status == 404  # the sample event's turn does not exist: one Query, answered 404
    names = _names(documents)
    assert ("## lambda_handler", "local") in names
    assert ("dynamodb", "aws") in names, names


def _under(documents: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str | None]]:
    """Every entity sent, with the id of the one it nests under (its parent's in the document, or the
    ``parent_id`` of a subsegment sent by itself)."""
    found: list[tuple[dict[str, Any], str | None]] = []

    def walk(node: dict[str, Any], parent: str | None) -> None:
        found.append((node, parent))
        for child in node.get("subsegments", []):
            walk(child, node["id"])

    for document in documents:
        walk(document, document.get("parent_id"))
    return found


def test_a_read_of_every_shard_traces_each_shards_query_under_the_handler(handler_environment: Settings) -> None:
    """The inbox's shards are read at once, on threads of a pool: each Query's subsegment still
    reaches the daemon, under the handler's subsegment as a call made by the handler's thread is."""
    approver = json.loads((ROOT / "events" / "list_inbox.json").read_text())["requestContext"]["authorizer"]
    status, documents = _traced(
        handler_environment, False, sample="list_inbox.json", APPROVER_PRINCIPALS=approver["iam"]["userArn"]
    )
    assert status == 200
    entities = _under(documents)
    [handler] = [node["id"] for node, _ in entities if node["name"] == "## lambda_handler"]
    queries = [parent for node, parent in entities if node.get("aws", {}).get("operation") == "Query"]
    assert len(queries) >= handler_environment.index_shards > 1
    assert set(queries) == {handler}


def test_what_a_turn_holds_stays_out_of_traces(handler_environment: Settings) -> None:
    from resumable.service import Service

    sentinel = f"sentinel-{uuid.uuid4().hex[:8]}"
    principal = json.loads((ROOT / "events" / "get_turn.json").read_text())["requestContext"]["authorizer"]["iam"]
    started = Service.from_settings(handler_environment).start_turn(
        f"traced-{uuid.uuid4().hex[:6]}", f"delete the {sentinel} record", principal["userArn"]
    )
    assert started.status == "waiting" and sentinel in started.model_dump_json()
    status, documents = _traced(handler_environment, disabled=False, turn=(started.session_id, started.turn_id))
    assert status == 200 and documents
    assert sentinel not in json.dumps(documents), "the turn's input is not in the traces"


def test_with_tracing_disabled_nothing_is_sent(handler_environment: Settings) -> None:
    status, documents = _traced(handler_environment, disabled=True)
    assert (status, documents) == (404, [])


def test_every_function_is_traced() -> None:
    for handler in sorted((ROOT / "functions").glob("*/app.py")):
        assert "@tracer.capture_lambda_handler(capture_response=False)" in handler.read_text(), handler
