"""What Lambda's python3.11 runtime does in a function's execution environment, for one function run
on this machine (resumable.local.execution starts it): put the function's code, its layers and the
runtime's own packages on the path and nothing else, import the handler (the init), then run one
invocation at a time as they arrive. With ``--check`` (make predeploy: resumable.local.imports), import
the handler, then build the agents once with the agent factory, and write what failed, if anything.

Run by its file's path, by an interpreter started with ``-I -S`` (no site-packages, no PYTHON*
variables): it imports the standard library only, so the path it builds is the whole of what the
function can import. ``argv``: the folders of the path (as JSON), the handler (``app.lambda_handler``),
and the file descriptors invocations arrive on and replies leave by. An invocation is one line of JSON
(``event`` and the context's fields); its reply is one line: ``{"result": ...}``, or ``{"error":
{"errorType", "errorMessage", "stackTrace"}}`` as Lambda reports a function's error (an init that
failed answers every invocation with its error, as Lambda's ``Runtime.ImportModuleError`` does).
The function's own output (its logs) goes to this process's stdout and stderr, as to CloudWatch.
"""

import importlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

# Lambda's limit on a synchronous invocation's response (its quotas: 6 MB).
MAX_RESPONSE_BYTES = 6_291_556


class LambdaContext:
    """What a handler may read of its context (the fields Lambda's python runtime gives)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.function_name = fields["function_name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn = fields["invoked_function_arn"]
        self.memory_limit_in_mb = fields["memory_limit_in_mb"]
        self.aws_request_id = fields["aws_request_id"]
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "local"
        self._deadline = fields["deadline"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def _error(error: BaseException, error_type: str | None = None, message: str | None = None) -> dict[str, Any]:
    return {
        "errorType": error_type or type(error).__name__,
        "errorMessage": message if message is not None else str(error),
        "stackTrace": traceback.format_exception(error),
    }


def _init(handler: str) -> tuple[Callable[..., Any] | None, dict[str, Any] | None]:
    """The handler, or the error Lambda's runtime reports for an init that failed."""
    module_name, _, attribute = handler.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        message = f"Unable to import module '{module_name}': {error}"
        print(f"[ERROR] Runtime.ImportModuleError: {message}", file=sys.stderr, flush=True)
        return None, _error(error, "Runtime.ImportModuleError", message)
    except Exception as error:
        traceback.print_exception(error)
        return None, _error(error)
    found = getattr(module, attribute, None)
    if found is None:
        message = f"Handler '{attribute}' missing on module '{module_name}'"
        return None, {"errorType": "Runtime.HandlerNotFound", "errorMessage": message, "stackTrace": []}
    return found, None


def main() -> None:
    if sys.argv[1] == "--check":
        path, handler, factory, report = json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
        _on_the_path(path)
        with open(report, "w", encoding="utf-8") as written:
            json.dump(_check(handler, factory, path), written)
        return
    path, handler, inbound, outbound = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C stops the local run, which stops this process)
    _on_the_path(path)
    function, failed = _init(handler)
    invocations = os.fdopen(inbound, "r", encoding="utf-8")
    replies = os.fdopen(outbound, "w", encoding="utf-8")
    for line in invocations:
        invocation = json.loads(line)
        reply = {"error": failed} if failed is not None else _run(function, invocation)
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def _on_the_path(path: list[str]) -> None:
    """The function's code, its layers, the standard library and the runtime's packages, in Lambda's order."""
    standard_library = [entry for entry in sys.path if entry]
    task_root, *layers = path[:-1]
    sys.path[:] = [task_root, *layers, *standard_library, path[-1]]
    os.chdir(task_root)


def _check(handler: str, factory: str, path: list[str]) -> dict[str, Any]:
    """make predeploy's check: the handler's module imports, and the agent factory (if named) imports and
    builds its agents once; what failed, and where an import failed, if anything did."""
    try:
        importlib.import_module(handler.rpartition(".")[0])
    except Exception as error:
        return {"failed": "handler", **_said(error, path)}
    if not factory:
        return {"failed": None}
    try:
        import tempfile

        from resumable.runtime.session import FileSession
        from resumable.service.agent_factory import AgentContext, build, load_factory

        with tempfile.TemporaryDirectory() as scratch:
            context = AgentContext("predeploy", "predeploy", FileSession(scratch))
            with build(load_factory(factory), context) as agent:
                built = type(agent).__name__
    except Exception as error:
        return {"failed": "factory", **_said(error, path)}
    return {"failed": None, "built": built}


def _said(error: BaseException, path: list[str]) -> dict[str, Any]:
    """What ``error`` says, and, where an import failed on its way (as its cause or context): the module
    not found, and the file that imported it with the folder of the path that file is in."""
    said: dict[str, Any] = {"error": f"{type(error).__name__}: {error}"}
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ImportError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return said
    said["missing"] = cause.name
    for frame in reversed(traceback.extract_tb(cause.__traceback__)):
        where = [entry for entry in path if frame.filename.startswith(entry.rstrip("/") + "/")]
        if where:
            said |= {"importer": os.path.relpath(frame.filename, where[-1]), "in": where[-1]}
            break
    return said


def _run(function: Callable[..., Any] | None, invocation: dict[str, Any]) -> dict[str, Any]:
    assert function is not None
    try:
        result = function(invocation["event"], LambdaContext(invocation["context"]))
    except Exception as error:
        traceback.print_exception(error)
        return {"error": _error(error)}
    try:
        marshalled = json.dumps(result)
    except (TypeError, ValueError) as error:  # as Lambda's runtime: the handler's result must be JSON
        return {"error": _error(error, "Runtime.MarshalError", f"Unable to marshal response: {error}")}
    size = len(marshalled.encode())
    if size > MAX_RESPONSE_BYTES:
        said = (
            f"Response payload size ({size} bytes) exceeded maximum allowed payload size ({MAX_RESPONSE_BYTES} bytes)."
        )
        return {"error": {"errorType": "Function.ResponseSizeTooLarge", "errorMessage": said, "stackTrace": []}}
    return {"result": json.loads(marshalled)}


if __name__ == "__main__":
    main()
