"""What template.yaml declares beyond the table and bucket, on the embedded AWS: its functions, run in
this process, and its state machine, executed by moto.

moto without Docker cannot run a Lambda function (it only echoes the payload), so a state machine's
Lambda tasks would never reach resumable. While ``functions_in_process()`` is active, every boto3
client made from the default session (moto's Step Functions interpreter makes its clients that way)
answers ``lambda:Invoke`` of a template function by calling the function's handler here, as Lambda
would: the reply is the payload; a raised error becomes ``FunctionError: Unhandled`` with
``{"errorType", "errorMessage"}``; ``InvocationType=Event`` runs the handler on a thread and
answers 202 at once. Invoking a function the template does not declare is a
``ResourceNotFoundException``, as on AWS.
"""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from resumable.config import Settings
from resumable.local import durable_workflows
from resumable.local.embedded_aws import LAMBDA_INVOCATIONS
from resumable.local.functions import ACCOUNT, ROOT, LambdaContext, function_arn, functions, load_handler, load_template

logger = logging.getLogger(__name__)

STATE_MACHINE = "ApprovalStateMachine"
Handler = Callable[[dict[str, Any], Any], Any]


@dataclass
class _Reply:
    """The HTTP side of a short-circuited botocore call (only the status is read)."""

    status_code: int
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes = b""


@dataclass
class InProcessLambda:
    """The ``before-call.lambda.Invoke`` handler: template functions by name, run here."""

    handlers: dict[str, Handler]
    background: list[threading.Thread] = field(default_factory=list)

    def __call__(self, params: dict[str, Any], **_: Any) -> tuple[_Reply, dict[str, Any]]:
        match = re.search(r"/functions/([^/]+)/invocations", params["url_path"])
        name = unquote(match.group(1)) if match else ""
        name = name.rsplit(":function:", 1)[-1].split(":", 1)[0]
        if (durable := durable_workflows.invoked(params)) is not None:  # (an execution started)
            status, started = durable
            return _Reply(status), started | {"Payload": io.BytesIO(started.get("Payload", b""))}
        handler = self.handlers.get(name)
        if handler is None:
            message = f"Function not found: {name} (template.yaml declares {sorted(self.handlers)})"
            return _Reply(404), {"Error": {"Code": "ResourceNotFoundException", "Message": message}}
        body = params.get("body") or b"{}"
        event = json.loads(body.decode() if isinstance(body, bytes) else body)
        if params.get("headers", {}).get("X-Amz-Invocation-Type") == "Event":
            thread = threading.Thread(target=self._run, args=(name, handler, event), daemon=True)
            self.background.append(thread)
            thread.start()
            return _Reply(202), {"StatusCode": 202, "Payload": io.BytesIO(b"")}
        reply, error = self._run(name, handler, event)
        response: dict[str, Any] = {"StatusCode": 200, "ExecutedVersion": "$LATEST"}
        if error is not None:
            response["FunctionError"] = "Unhandled"
            reply = error
        response["Payload"] = io.BytesIO(json.dumps(reply).encode())
        return _Reply(200), response

    def _run(self, name: str, handler: Handler, event: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        context = LambdaContext(name, uuid.uuid4().hex, invoked_function_arn=function_arn(name))
        try:
            return handler(event, context), None
        except Exception as error:
            kind = getattr(error, "error_type", type(error).__name__)  # (a function run from its layers: Lambda's)
            logger.info("function %s raised %s: %s", name, kind, error)
            return None, {"errorType": kind, "errorMessage": str(error), "stackTrace": []}

    def wait(self, timeout: float = 30) -> bool:
        """Wait for the asynchronous invocations started so far (and those they start); whether they
        all finished within ``timeout`` seconds each."""
        while True:
            running = [thread for thread in self.background if thread.is_alive()]
            if not running:
                return True
            for thread in running:
                thread.join(timeout)
                if thread.is_alive():
                    return False


@contextmanager
def functions_in_process(overrides: dict[str, Handler] | None = None) -> Iterator[InProcessLambda]:
    """Route ``lambda:Invoke`` of template.yaml's functions to their handlers in this process.

    ``overrides`` replaces handlers by function name (tests wrap a handler to act between steps)."""
    import boto3

    from resumable.aws import clients

    handlers: dict[str, Handler] = {name: load_handler(f) for name, f in functions(load_template()).items()}
    router = InProcessLambda({**handlers, **(overrides or {})})
    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
    # resumable's clients come from its own session (resumable.aws.clients); a test's own, from boto3's
    emitters: list[Any] = [boto3.DEFAULT_SESSION.events, clients.session().get_component("event_emitter")]  # type: ignore[union-attr]
    if not _ROUTERS:
        for events in emitters:
            events.register("before-call.lambda.Invoke", _innermost, unique_id=_HOOK)
        LAMBDA_INVOCATIONS.append(_innermost)  # (functions run in processes of their own)
    _ROUTERS.append(router)
    try:
        yield router
    finally:
        _ROUTERS.remove(router)
        if not _ROUTERS:
            for events in emitters:
                events.unregister("before-call.lambda.Invoke", unique_id=_HOOK)
            LAMBDA_INVOCATIONS.remove(_innermost)


# The routings in effect, innermost last: it answers (a test can wrap a handler within a wider routing).
_ROUTERS: list[InProcessLambda] = []
_HOOK = "resumable-in-process-lambda"


def _innermost(params: dict[str, Any], **kwargs: Any) -> tuple[_Reply, dict[str, Any]] | None:
    return _ROUTERS[-1](params, **kwargs) if _ROUTERS else None


def state_machine_definition(settings: Settings) -> str:
    """The template's state machine definition with its substitutions resolved for ``settings``."""
    template = load_template()
    properties = template["Resources"][STATE_MACHINE]["Properties"]
    definition: str = (ROOT / properties["DefinitionUri"]).read_text()
    resources = template["Resources"]
    for name, value in properties.get("DefinitionSubstitutions", {}).items():
        reference = str(value).removesuffix(".Arn")
        if resources.get(reference, {}).get("Type") == "AWS::Serverless::Function":
            resolved = function_arn(reference, settings.region)
        elif resources.get(reference, {}).get("Type") == "AWS::DynamoDB::Table":
            resolved = settings.table_name
        elif reference == "ApprovalExpirySeconds":
            resolved = str(settings.approval_expiry_seconds)
        else:
            raise ValueError(f"cannot resolve the state machine's substitution {name}: {value!r}")
        definition = definition.replace("${" + name + "}", resolved)
    return definition


def create_state_machine(settings: Settings, name: str = "resumable-approval") -> str:
    """Create the template's state machine on the embedded AWS (moto executes it); its ARN."""
    from resumable.aws.clients import client

    created = client("stepfunctions", settings).create_state_machine(
        name=name,
        definition=state_machine_definition(settings),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/resumable-approval",
        type="STANDARD",
    )
    return str(created["stateMachineArn"])
