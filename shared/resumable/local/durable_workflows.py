"""The template's durable functions (the sample durable workflow, ApprovalDurableFunction) on the laptop:
each run by the durable execution SDK's local runner (its testing SDK's ``DurableFunctionTestRunner``) in
this process, which replays the workflow from its start at every invocation, as Lambda does.

While ``running()`` is active the embedded AWS answers, for those functions, what Lambda would:

- ``Invoke`` of the function by a qualified name or ARN (``:live``, ``:$LATEST``, or ``Qualifier``; an
  unqualified one is refused, as Lambda refuses it for a durable function) starts a durable execution,
  named by the ``X-Amz-Durable-Execution-Name`` header (the same name and payload again start nothing
  new: its execution's ARN again; another payload is refused, ``DurableExecutionAlreadyStartedException``).
  ``InvocationType=Event`` replies 202 at once; otherwise the reply waits for the execution's end.
  Either way the ``X-Amz-Durable-Execution-Arn`` header names the execution. As Lambda does, it
  refuses a payload that is not JSON or is too large, and an alias the template does not make (only
  ``live``); a ``DryRun`` starts nothing.
- ``GetDurableExecution`` of one of its executions: its status (``RUNNING``, ``SUCCEEDED``, ``FAILED``,
  ...), input, version, and result or error. Any other durable-execution call (its history, a stop)
  is answered 501, saying what make run serves.
- the callback operations the service sends its executions (resumable.local.durable_callbacks).

The function's AWS calls (StartTurn, invoked directly) are recorded as the function's, as any template
function's (resumable.local.permissions)."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote

from resumable.local import durable_callbacks
from resumable.local.functions import ACCOUNT, durable_functions, function_arn, load_handler, load_template

logger = logging.getLogger(__name__)

REGION = "us-east-1"
# How long an invocation for the reply waits for its execution (Lambda's own limit for a durable function).
SYNCHRONOUS_SECONDS = 900
MAX_PAYLOAD = 6 * 1024 * 1024  # (Lambda's, for a request waited for; for an asynchronous one:)
MAX_EVENT_PAYLOAD = 1024 * 1024
QUALIFIERS = ("live", "$LATEST")  # (the template's alias, and the unpublished version)
EXECUTION_PATH = re.compile(r"^/2025-12-01/durable-executions/(.+)$")

Answer = tuple[int, dict[str, Any]]
"""A status and the response as botocore parses it (``Payload``, ``DurableExecutionArn`` or ``Error``)."""


@dataclass
class DurableFunction:
    """A durable function of the template, its runner, and the executions started by name: each known by
    an ARN shaped as Lambda's (``...:function:NAME:VERSION/durable-execution/EXECUTION/ID``), which
    stands for the runner's own."""

    name: str
    runner: Any
    timeout: int
    executions: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (ARN, payload)
    runs: dict[str, str] = field(default_factory=dict)  # ARN -> the runner's ARN
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, name: str, payload: str, version: str) -> str | None:
        """The ARN of the execution called ``name``: started now with ``payload``, or started before
        with the same payload; None: it was started before with another payload."""
        with self.lock:
            if name in self.executions:
                arn, started_with = self.executions[name]
                return arn if started_with == payload else None
            run: str = self.runner.run_async(
                input=payload,
                execution_timeout=self.timeout,
                function_name=self.name,
                execution_name=name,
                account_id=ACCOUNT,
            )
            arn = f"{function_arn(self.name, REGION)}:{version}/durable-execution/{name}/{uuid.uuid4().hex}"
            self.executions[name], self.runs[arn] = (arn, payload), run
            return arn

    def described(self, arn: str) -> dict[str, Any]:
        """GetDurableExecution's reply for ``arn``, as the testing SDK's own web runner answers it (from
        the runner's executor: its public waits cannot see an execution that has ended)."""
        said: dict[str, Any] = self.runner._executor.get_execution_details(self.runs[arn]).to_dict()
        said["DurableExecutionArn"] = arn
        said["FunctionArn"] = function_arn(self.name, REGION)
        said["Version"] = arn.split(":function:", 1)[1].split("/", 1)[0].split(":", 1)[1]  # (the one it runs)
        for moment in ("StartTimestamp", "EndTimestamp"):
            if isinstance(said.get(moment), datetime):
                said[moment] = said[moment].timestamp()
        return said


RUNNING: dict[str, list[DurableFunction]] = {}
"""The durable functions run in this process, by name (the innermost ``running()`` block's last)."""


@contextmanager
def running(overrides: dict[str, Any] | None = None) -> Iterator[dict[str, DurableFunction]]:
    """Run the template's durable functions here (``overrides``: handlers by name instead of theirs)
    until the block ends; within another such block, these answer until this one ends, then those again."""
    from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

    template = load_template()
    mine: dict[str, DurableFunction] = {}
    with ExitStack() as stack:
        stack.enter_context(_carrying_who_calls())
        for name, function in durable_functions(template).items():
            handler = (overrides or {}).get(name) or load_handler(function, here=True)
            runner = stack.enter_context(DurableFunctionTestRunner(handler=handler, skip_time=False, region=REGION))
            stack.enter_context(durable_callbacks.answering(runner))
            timeout = int(template["Resources"][name]["Properties"]["DurableConfig"]["ExecutionTimeout"])
            mine[name] = DurableFunction(name, runner, timeout)
            RUNNING.setdefault(name, []).append(mine[name])
            stack.callback(RUNNING[name].remove, mine[name])
        yield mine


def _innermost(name: str) -> DurableFunction | None:
    """The durable function ``name`` run by the innermost ``running()`` block."""
    found = RUNNING.get(name)
    return found[-1] if found else None


class _CarryingContext(ThreadPoolExecutor):
    """The SDK's pool for a handler's invocation, whose work runs in the context of whoever submits it."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


_CARRYING = [0]  # (how many running() blocks carry it: the SDK's own pool is put back after the last)


@contextmanager
def _carrying_who_calls() -> Iterator[None]:
    """The SDK runs a handler's invocation on a worker thread of a fresh context, where the record of
    whose AWS calls these are (resumable.local.permissions.calls.acting_as, a context variable) would be
    lost: in Lambda the function has its process to itself. Here its worker carries its caller's context."""
    from aws_durable_execution_sdk_python import execution

    _CARRYING[0] += 1
    execution.ThreadPoolExecutor = _CarryingContext  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _CARRYING[0] -= 1
        if not _CARRYING[0]:
            execution.ThreadPoolExecutor = ThreadPoolExecutor  # type: ignore[attr-defined]


def invoked(params: dict[str, Any]) -> Answer | None:
    """Lambda's reply to an ``Invoke`` of a durable function run here (None: it names no such function);
    ``params``: botocore's request (``url_path``, ``query_string``, ``headers``, ``body``). Whatever
    fails in answering is a ``ServiceException``, never a traceback."""
    matched = re.search(r"/functions/([^/]+)/invocations", params["url_path"])
    named = unquote(matched.group(1)) if matched else ""
    function, _, qualifier = named.rsplit(":function:", 1)[-1].partition(":")
    durable = _innermost(function)
    if durable is None:
        return None
    try:
        return _invoked(durable, qualifier, params)
    except Exception as error:  # (the runner failed to start it: said, as Lambda says its own failures)
        logger.exception("the local durable function %s failed to answer an Invoke", function)
        return 500, _error("ServiceException", f"the local runner failed ({type(error).__name__}): nothing was started")


def _invoked(durable: DurableFunction, qualifier: str, params: dict[str, Any]) -> Answer:
    function = durable.name
    query = params.get("query_string") or {}
    qualifier = qualifier or str(query.get("Qualifier", "") if isinstance(query, dict) else "")
    headers: dict[str, str] = params.get("headers") or {}
    if qualifier and qualifier not in QUALIFIERS and not qualifier.isdigit():
        return 404, _error(
            "ResourceNotFoundException", f"Function not found: {function}:{qualifier} (its alias is live)"
        )
    if headers.get("X-Amz-Invocation-Type") == "DryRun":
        return 204, {"StatusCode": 204, "Payload": b""}
    if not qualifier:
        return 400, _error(
            "InvalidParameterValueException",
            f"{function} is a durable function: invoke it by a qualified ARN or name ({function}:live, or "
            f"{function}:$LATEST). Nothing was started",
        )
    name = headers.get("X-Amz-Durable-Execution-Name") or str(uuid.uuid4())
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        return 400, _error(
            "InvalidParameterValueException",
            f"the durable execution name {name[:80]!r} is not 1 to 64 letters, digits, - or _: nothing was started",
        )
    body = params.get("body") or b"{}"
    payload = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    most = MAX_EVENT_PAYLOAD if headers.get("X-Amz-Invocation-Type") == "Event" else MAX_PAYLOAD
    if len(body) > most:
        return 413, _error("RequestTooLargeException", f"the payload is over {most} bytes: nothing was started")
    try:
        json.loads(payload)
    except ValueError:
        return 400, _error("InvalidRequestContentException", "the payload is not JSON: nothing was started")
    version = qualifier if qualifier == "$LATEST" or qualifier.isdigit() else "1"  # (an alias: its version)
    arn = durable.start(name, payload, version)
    if arn is None:
        return 409, _error(
            "DurableExecutionAlreadyStartedException",
            f"the durable execution {name} was started with another payload: use another name, or read the "
            "execution with GetDurableExecution. Nothing was started",
        )
    run = durable.runs[arn]
    if headers.get("X-Amz-Invocation-Type") == "Event":
        return 202, {"StatusCode": 202, "DurableExecutionArn": arn, "ExecutedVersion": version, "Payload": b""}
    try:
        result = durable.runner.wait_for_result(run, timeout=SYNCHRONOUS_SECONDS)
    except TimeoutError:
        return 200, {"StatusCode": 200, "DurableExecutionArn": arn, "FunctionError": "Unhandled", "Payload": b"{}"}
    reply: dict[str, Any] = {"StatusCode": 200, "DurableExecutionArn": arn, "ExecutedVersion": version}
    if result.error is not None:
        error = result.error.to_dict()
        said = {"errorType": error.get("ErrorType", "Error"), "errorMessage": error.get("ErrorMessage", "")}
        return 200, reply | {"FunctionError": "Unhandled", "Payload": json.dumps(said).encode()}
    return 200, reply | {"Payload": (result.result or "null").encode()}


def described(method: str, path: str) -> tuple[int, dict[str, str], bytes] | None:
    """GetDurableExecution's reply (status, headers, body) for ``path``; None: not such a request."""
    matched = EXECUTION_PATH.match(path)
    if matched is None:
        return None
    arn = unquote(matched.group(1))
    last = arn.rsplit("/", 1)[-1]
    if method != "GET" or last in ("history", "state", "checkpoint", "stop"):
        said = {
            "Type": "Server",
            "message": f"make run serves Invoke and GetDurableExecution of a durable function, not {last}",
        }
        return _json(501, said, "NotImplementedException")
    for durable in (d for stacked in RUNNING.values() for d in stacked):
        if arn in durable.runs:
            return _json(200, durable.described(arn))
    return _json(
        404, {"Type": "User", "message": f"no durable execution {arn[:200]} here"}, "ResourceNotFoundException"
    )


def _error(code: str, message: str) -> dict[str, Any]:
    return {"Error": {"Code": code, "Message": message}}


def _json(status: int, said: dict[str, Any], error: str | None = None) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps(said).encode()
    headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
    return status, headers | ({"x-amzn-errortype": error} if error else {}), body
