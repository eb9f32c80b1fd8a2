"""The embedded AWS's answer to Lambda's durable-callback operations (``SendDurableExecutionCallback
Success``, ``Failure``, ``Heartbeat``), which moto lacks: each is handed to the durable execution SDK's
local runner that runs the callback's execution in this process (``RUNNERS``: the testing SDK's
``DurableFunctionTestRunner``, which ``make run`` and the tests start), as Lambda hands it to the
execution. A callback none of them knows, or one they refuse (completed before, timed out, its
execution ended), is refused as Lambda refuses it, by the error the runner names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

# (the id is base64, whose "/" the request's path carries encoded, and the server hands on decoded)
PATH = re.compile(r"^/2025-12-01/durable-execution-callbacks/(.+)/(succeed|fail|heartbeat)$")

RUNNERS: list[Any] = []
"""The local runners of durable executions in this process, the latest first to be asked."""

Answer = tuple[int, dict[str, str], bytes]


@contextmanager
def answering(runner: Any) -> Iterator[Any]:
    """``runner`` (a local runner of durable executions) is handed the callback operations sent to the
    embedded AWS of this process until the block ends."""
    RUNNERS.append(runner)
    try:
        yield runner
    finally:
        RUNNERS.remove(runner)


def answer(path: str, body: bytes) -> Answer | None:
    """The reply to a request for ``path`` if it is a durable-callback operation (None: it is not)."""
    matched = PATH.match(path)
    if matched is None:
        return None
    callback_id, verb = unquote(matched.group(1)), matched.group(2)
    refused: Answer = _error(404, "ResourceNotFoundException", "no durable execution here has this callback")
    for runner in reversed(RUNNERS):
        try:
            if verb == "succeed":
                runner.send_callback_success(callback_id, body)
            elif verb == "fail":
                runner.send_callback_failure(callback_id, _error_object(body))
            else:
                runner.send_callback_heartbeat(callback_id)
        except Exception as error:  # (the runner's own errors are named as Lambda's: ResourceNotFoundException, ...)
            code = type(error).__name__
            refused = _error(404 if code == "ResourceNotFoundException" else 400, code, str(error))
            continue
        return 200, {"Content-Length": "0"}, b""
    return refused


def _error_object(body: bytes) -> Any:
    from aws_durable_execution_sdk_python.lambda_service import ErrorObject

    said = json.loads(body or b"{}")
    return ErrorObject.from_dict(said if isinstance(said, dict) else {})


def _error(status: int, code: str, message: str) -> Answer:
    body = json.dumps({"Type": "User", "message": message}).encode()
    headers = {"x-amzn-errortype": code, "Content-Type": "application/json", "Content-Length": str(len(body))}
    return status, headers, body
