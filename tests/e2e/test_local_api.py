"""`make run`'s local API: template.yaml's routes over real HTTP, against the embedded AWS."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from resumable.api.app import forget
from resumable.local.functions import load_template
from resumable.local.functions import routes as template_routes
from resumable.local.server import requests_log
from resumable.local.template import functions_in_process
from tests.e2e.local_api import APPROVER, MALLORY, call
from tests.factories import LEDGER_ENV, executions
from tests.patience import HANG_SECONDS


def test_every_route_of_the_template_is_served() -> None:
    declared = {(r.method, r.path) for r in template_routes(load_template())}
    assert declared == {
        ("POST", "/sessions/{sessionId}/turns"),
        ("GET", "/sessions/{sessionId}/turns/{turnId}"),
        ("GET", "/sessions/{sessionId}/turns/{turnId}/conversation"),
        ("POST", "/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}"),
        ("POST", "/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}/dismiss"),
        ("DELETE", "/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}/dismiss"),
        ("POST", "/sessions/{sessionId}/turns/{turnId}/cancel"),
        ("GET", "/sessions/{sessionId}/interactions"),
        ("GET", "/interactions"),
        ("GET", "/interactions/{requestId}"),
        ("GET", "/openapi.json"),
        ("GET", "/inbox"),
        ("DELETE", "/sessions/{sessionId}"),
        ("POST", "/sessions/{sessionId}/restore"),
        ("GET", "/audit"),
        ("GET", "/audit/verify"),
        ("GET", "/grants"),
        ("DELETE", "/grants/{grantId}"),
        ("GET", "/admin/stuck"),
        ("GET", "/admin/sessions/{sessionId}/turns/{turnId}"),
        ("POST", "/admin/sessions/{sessionId}/turns/{turnId}/recover"),
        ("POST", "/admin/sessions/{sessionId}/republish"),
        ("POST", "/slack/interactions"),  # (the Slack function's, made only with SlackChannel)
        ("GET", "/decide/{token}"),
        ("POST", "/decide/{token}"),
    }


@pytest.mark.slow
def test_the_walkthrough_start_approve_complete_and_start_cancel(url: str) -> None:
    status, turn = call(url, "POST", "/sessions/walk/turns", {"prompt": "delete the prod-db record"})
    assert (status, turn["status"]) == (201, "waiting")
    [interaction] = turn["interactions"]
    assert interaction["reason"]["input"] == {"name": "prod-db"}
    assert call(url, "GET", "/sessions/walk/interactions?status=requested")[1]["interactions"] == [interaction]
    path = f"/sessions/walk/turns/{turn['turnId']}/interactions/{interaction['requestId']}"
    # Another principal cannot see, answer or cancel the session; an approver principal can answer.
    assert call(url, "GET", f"/sessions/walk/turns/{turn['turnId']}", principal=MALLORY)[0] == 404
    assert call(url, "GET", "/sessions/walk/interactions", principal=MALLORY)[0] == 404
    assert call(url, "POST", path, {"response": {"decision": "approve"}}, principal=MALLORY)[0] == 404
    assert call(url, "POST", f"/sessions/walk/turns/{turn['turnId']}/cancel", principal=MALLORY)[0] == 404
    assert call(url, "POST", "/sessions/walk/turns", {"prompt": "delete test-db"}, principal=MALLORY)[0] == 404
    assert call(url, "GET", f"/sessions/walk/turns/{turn['turnId']}")[1]["status"] == "waiting"
    status, done = call(url, "POST", path, {"response": {"decision": "approve"}}, principal=APPROVER)
    assert (status, done["status"], done["output"]) == (200, "completed", "record prod-db deleted")
    assert done["interactions"][0]["answeredBy"] == APPROVER

    _, other = call(url, "POST", "/sessions/walk-2/turns", {"prompt": "delete the test-db record"})
    status, canceled = call(url, "POST", f"/sessions/walk-2/turns/{other['turnId']}/cancel")
    assert (status, canceled["status"]) == (200, "canceled")
    assert call(url, "GET", "/nowhere")[0] == 404


@pytest.mark.slow
def test_a_turn_over_the_time_budget_replies_running_and_continues_asynchronously(
    url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """StartTurn checkpoints the turn (budget 0), replies 201 running and invokes itself asynchronously
    (run in-process here, as Lambda would); the client polls until the turn waits for its approval."""
    ledger = tmp_path / "executions.log"
    monkeypatch.setenv("TURN_BUDGET_SECONDS", "0")
    monkeypatch.setenv("AGENT_FACTORY", "tests.factories:looks_then_deletes")
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    forget()
    try:
        with functions_in_process() as lambdas:
            status, turn = call(url, "POST", "/sessions/long/turns", {"prompt": "delete prod-db"})
            assert (status, turn["status"], turn["interactions"]) == (201, "running", [])
            assert lambdas.wait(HANG_SECONDS), "the continuation never finished (a hang)"
            polled = call(url, "GET", f"/sessions/long/turns/{turn['turnId']}")[1]
            assert polled["status"] == "waiting"
            [interaction] = polled["interactions"]
            path = f"/sessions/long/turns/{turn['turnId']}/interactions/{interaction['requestId']}"
            status, done = call(url, "POST", path, {"response": {"decision": "approve"}})
            assert (status, done["status"], done["output"]) == (200, "completed", "The record is gone.")
        assert executions(ledger) == ["delete prod-db"]
    finally:
        monkeypatch.undo()
        forget()


@pytest.mark.slow
def test_path_parameters_are_percent_decoded_as_api_gateway_does_then_validated(url: str) -> None:
    status, turn = call(url, "POST", "/sessions/team%3Aalpha/turns", {"prompt": "delete the test-db record"})
    assert (status, turn["sessionId"]) == (201, "team:alpha")
    for spelled in ("team:alpha", "team%3Aalpha", "team%3aalpha"):
        status, read = call(url, "GET", f"/sessions/{spelled}/turns/{turn['turnId']}")
        assert (status, read["turnId"]) == (200, turn["turnId"])
        assert call(url, "GET", f"/sessions/{spelled}/interactions")[0] == 200
    # Decoded, these are not ids: '/' splits the path (no route), '%' and ' ' are outside the alphabet.
    assert call(url, "GET", f"/sessions/team%2Falpha/turns/{turn['turnId']}")[0] == 404
    assert call(url, "GET", f"/sessions/team%25alpha/turns/{turn['turnId']}")[0] == 404
    status, refused = call(url, "POST", "/sessions/team%20alpha/turns", {"prompt": "delete prod-db"})
    assert (status, refused["code"]) == (422, "validation_failed")
    assert "letters, digits" in refused["message"]
    call(url, "POST", f"/sessions/team:alpha/turns/{turn['turnId']}/cancel")


def _raw_request(port: int, head: bytes, body: bytes, barrier: threading.Barrier) -> bytes:
    """One request sent as a client on a busy network does: the headers in one write, the body in
    another; the whole reply (the server closes the connection after it)."""
    barrier.wait()
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS) as connection:
        connection.sendall(head)
        connection.sendall(body)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    return reply


@pytest.mark.slow
def test_a_hundred_clients_answering_at_once_in_two_writes_each_get_a_reply_and_the_action_runs_once(
    url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ledger = tmp_path / "executions.log"
    monkeypatch.setenv("AGENT_FACTORY", "tests.factories:nested")
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    forget()
    try:
        _, turn = call(url, "POST", "/sessions/crowd/turns", {"prompt": "delete the prod-db record"})
        path = f"/sessions/crowd/turns/{turn['turnId']}/interactions/{turn['interactions'][0]['requestId']}"
        body = json.dumps({"response": {"decision": "approve"}}).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        port = int(url.rsplit(":", 1)[1])
        barrier = threading.Barrier(100)
        with ThreadPoolExecutor(100) as pool:
            replies = list(pool.map(lambda _: _raw_request(port, head, body, barrier), range(100)))
        statuses = [reply.split(b" ", 2)[1] for reply in replies if reply]
        assert len(statuses) == 100, f"{100 - len(statuses)} clients got no reply"
        assert set(statuses) == {b"200"}, statuses
        assert call(url, "GET", f"/sessions/crowd/turns/{turn['turnId']}")[1]["status"] == "completed"
        assert executions(ledger) == ["delete prod-db"]
    finally:
        monkeypatch.undo()
        forget()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["TRACE", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW"])
def test_a_method_a_route_does_not_take_is_405_with_allow(url: str, method: str) -> None:
    request = urllib.request.Request(f"{url}/sessions/demo/turns", method=method)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=HANG_SECONDS)
    assert refused.value.code == 405
    assert refused.value.headers["Allow"] == "POST"
    if method != "HEAD":
        error = json.loads(refused.value.read())
        assert error["code"] == "method_not_allowed" and "takes POST" in error["message"]
    with pytest.raises(urllib.error.HTTPError) as unknown:
        urllib.request.urlopen(urllib.request.Request(f"{url}/nowhere", method=method), timeout=HANG_SECONDS)
    assert unknown.value.code == 404


@pytest.mark.slow
def test_a_handler_that_raises_gets_a_500_with_a_code_and_a_message_and_the_server_serves_on(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_FACTORY", "tests.factories:no_such_factory")
    forget()
    try:
        status, error = call(url, "POST", "/sessions/misconfigured/turns", {"prompt": "delete prod-db"})
        assert (status, error["code"]) == (500, "internal")
        assert "cannot be loaded" in error["message"]
    finally:
        monkeypatch.undo()
        forget()
    assert call(url, "GET", "/openapi.json")[0] == 200


@pytest.mark.slow
def test_make_run_on_a_port_in_use_says_which_port_and_how_to_pick_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [sys.executable, "-m", "resumable.local.run"],
            check=False,
            env={**os.environ, "PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
        )
    assert ran.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in ran.stderr
    assert f"PORT={port + 1} make run" in ran.stderr
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize("port", ["abc", "99999", "-1"])
def test_make_run_with_a_port_that_is_no_port_says_what_is_allowed_in_one_line(port: str) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "resumable.local.run"],
        check=False,
        env={**os.environ, "PORT": port},
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stderr.strip().splitlines() == [
        f"make run: PORT={port!r} is not a port: give a number from 1 to 65535 (PORT=3001 make run), "
        "or 0 for any free one"
    ]


def test_make_run_with_a_log_level_that_is_none_says_which_there_are() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "resumable.local.run"],
        check=False,
        env={**os.environ, "PORT": "0", "LOG_LEVEL": "loud"},
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "LOG_LEVEL='loud' is not a level: DEBUG (every request and metric), INFO, WARNING, ERROR" in ran.stderr


def test_a_request_is_logged_only_at_debug_so_a_polling_page_leaves_the_log_quiet(url: str) -> None:
    seen: list[tuple[int, str]] = []

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append((record.levelno, record.getMessage()))

    handler, level = Seen(), requests_log.level
    requests_log.addHandler(handler)
    try:
        requests_log.setLevel(logging.INFO)  # make run's default
        assert call(url, "GET", "/openapi.json")[0] == 200
        assert seen == []
        requests_log.setLevel(logging.DEBUG)  # LOG_LEVEL=DEBUG make run
        assert call(url, "GET", "/openapi.json")[0] == 200
        assert seen == [(logging.DEBUG, "GET /openapi.json -> 200")]
    finally:
        requests_log.removeHandler(handler)
        requests_log.setLevel(level)


def test_query_parameters_reach_the_handler_as_api_gateway_builds_them(url: str) -> None:
    """Repeated values joined by commas, blank values kept: both refused by the inbox as on AWS."""
    for query in ("status=answered&status=requested", "limit=1&limit=2", "status=", "limit=", "cursor="):
        status, body = call(url, "GET", f"/interactions?{query}")
        assert (status, body["code"]) == (422, "validation_failed"), query


def _raw(url: str, request: bytes) -> tuple[int, dict[str, Any]]:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=HANG_SECONDS) as connection:
        connection.sendall(request)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /interactions HTTP/9.9\r\n\r\n",
        b"POST /sessions/s/turns HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}",
        b"GET /interactions?cursor=" + b"x" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /sessions/s/turns HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    ],
    ids=[
        "garbage request line",
        "unknown HTTP version",
        "Content-Length not a number",
        "huge URL",
        "malformed chunk",
    ],
)
def test_malformed_http_gets_a_json_error_and_the_server_serves_on(url: str, request_bytes: bytes) -> None:
    status, body = _raw(url, request_bytes)
    assert (400 <= status < 500 or status == 505) and body["code"] == "bad_request", body  # 505: HTTP version
    assert call(url, "GET", "/interactions")[0] == 200


def test_a_long_url_is_refused_saying_so(url: str) -> None:
    status, body = _raw(url, b"GET /interactions?cursor=" + b"x" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, body["message"]) == (414, "URI is too long; nothing was done")


def test_a_body_over_the_apis_limit_is_a_413_that_a_client_writing_it_whole_reads(url: str) -> None:
    """As API Gateway: over 10 MB is refused, and the client that sent it all before reading (as
    http.client does) gets the reply, not a broken pipe."""
    import http.client

    host, port = url.removeprefix("http://").split(":")
    for declared, sent in ((20_000_000, 20_000_000), (99_999_999_999, 2)):
        connection = http.client.HTTPConnection(host, int(port), timeout=HANG_SECONDS)
        try:
            connection.putrequest("POST", "/sessions/big/turns")
            connection.putheader("Content-Length", str(declared))
            connection.endheaders()
            connection.send(b"{" + b" " * (sent - 2) + b"}")
            reply = connection.getresponse()
            body = json.loads(reply.read())
        finally:
            connection.close()
        assert (reply.status, body["code"]) == (413, "too_large"), body
        assert f"the body is {declared} bytes, over the API's 10,485,760" in body["message"]
    assert call(url, "GET", "/interactions")[0] == 200


def test_a_chunked_body_is_read_whole(url: str) -> None:
    """A client that streams its body in chunks (curl with Transfer-Encoding: chunked) is served as
    one that sends its length."""
    prompt = json.dumps({"prompt": "delete the c record"}).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (prompt[:7], prompt[7:])) + b"0\r\n\r\n"
    head = (
        b"POST /sessions/chunked/turns HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    status, body = _raw(url, head + chunks)
    assert (status, body["status"]) == (201, "waiting"), body


@pytest.mark.parametrize("size", [b"zz", b"-2", b""])
def test_a_chunk_size_that_is_no_size_is_refused_at_once_saying_so(url: str, size: bytes) -> None:
    head = b"POST /sessions/s/turns HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    status, body = _raw(url, head + size + b"\r\n{}\r\n0\r\n\r\n")
    assert (status, body["code"]) == (400, "bad_request") and "chunk's size line" in body["message"], body


@pytest.mark.parametrize(
    "start",
    [
        ["-c", "import runpy; runpy.run_path('functions/submit_approval/app.py')"],  # a function's start (init)
        ["-m", "resumable.local.run"],  # make run's
    ],
    ids=["a function", "make run"],
)
def test_a_bad_rule_in_the_environment_stops_the_start_saying_which(start: list[str]) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "RESUMABLE_"))}
    environment |= {
        "APPROVAL_RULES": '[{"tools": ["delete_*"], "required": 2}, {"tools": ["drop_*"], "required": "two"}]'
    }
    started = subprocess.run(
        [sys.executable, *start],
        cwd=Path(__file__).resolve().parents[2],
        env=environment,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert started.returncode != 0
    assert 'APPROVAL_RULES: rule 2 (["drop_*"]) is not a rule: required: Input should be a valid integer' in (
        started.stderr
    )


def test_first_requests_served_at_once_each_get_their_own_reply_not_another_resolvers_500(
    handler_environment: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that serves requests at once (the local server, make load) builds its one resolver
    once: two built by two first requests would share one router, and the routes of one would read
    the other's context (every request after a 500)."""
    from resumable.api import app as api_app
    from resumable.local.functions import LambdaContext, api_event, load_handler

    real = api_app.build_app

    def slow_to_build(*args: Any, **kwargs: Any) -> Any:
        built = real(*args, **kwargs)
        time.sleep(0.3)  # (so that a second first request comes while the first is building)
        return built

    monkeypatch.setattr(api_app, "build_app", slow_to_build)
    forget()
    [route] = [
        r
        for r in template_routes(load_template())
        if (r.method, r.path) == ("GET", "/sessions/{sessionId}/turns/{turnId}")
    ]
    handler = load_handler(route)
    event = api_event(route, "GET", "/sessions/s-none/turns/t-none", "", {}, b"", None)

    def status(_: int) -> int:
        return int(handler(event, LambdaContext(route.function, "request"))["statusCode"])

    with ThreadPoolExecutor(4) as pool:
        at_once = list(pool.map(status, range(4)))
    after = [status(n) for n in range(3)]
    assert at_once + after == [404] * 7, at_once + after
    forget()


def test_an_answer_records_only_the_channel_the_service_can_tell(url: str) -> None:
    """X-Resumable-Via is the caller's word: it may say cli or page (shown as such), never a channel the
    service itself knows (slack, email: a Slack press or a decision link), which it ignores."""
    from tests.e2e.local_api import PRINCIPAL_HEADER

    for said, recorded in (("email", "api"), ("slack", "api"), ("cli", "cli")):
        status, turn = call(url, "POST", f"/sessions/via-{said}/turns", {"prompt": "delete prod-db"})
        assert status == 201 and turn["status"] == "waiting", turn
        request_id = turn["interactions"][0]["requestId"]
        path = f"/sessions/via-{said}/turns/{turn['turnId']}/interactions/{request_id}"
        headers = {"content-type": "application/json", PRINCIPAL_HEADER: APPROVER, "x-resumable-via": said}
        body = json.dumps({"response": {"decision": "approve"}}).encode()
        request = urllib.request.Request(url + path, data=body, method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=HANG_SECONDS) as reply:
            answered = json.loads(reply.read())
        [question] = [i for i in answered["interactions"] if i["requestId"] == request_id]
        assert question["answeredVia"] == recorded, said
