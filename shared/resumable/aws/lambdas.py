"""Invoking a Lambda function: asynchronously, how a checkpointed turn is continued; and waiting for its
reply, how a durable function's submitter starts the turn it waits for (resumable.integrations.durable)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient  # noqa: F401 (the string type argument of LazyClient below)


class Lambdas(LazyClient["LambdaClient"]):
    """``Invoke``, asynchronously or for the reply. The client is made on first use."""

    service = "lambda"

    def invoke_async(self, function: str, event: dict[str, Any]) -> None:
        """Queue ``event`` for ``function`` (name or ARN); Lambda runs it, and retries it twice if it fails."""
        try:
            self.client.invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(event).encode())
        except Exception as error:
            raise AwsError(f"invoking {function} asynchronously failed: {error}") from error

    def invoke(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        """``function``'s reply to ``event`` (``RequestResponse``). A function that raised raises
        ``FunctionError`` with its error type and message; a call Lambda refused, ``AwsError``."""
        try:
            reply = self.client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
            payload: Any = json.loads(reply["Payload"].read() or b"null")
        except Exception as error:
            raise AwsError(f"invoking {function} failed: {error}") from error
        if reply.get("FunctionError"):
            said = payload if isinstance(payload, dict) else {}
            raise FunctionError(str(said.get("errorType", "Error")), str(said.get("errorMessage", payload)))
        if not isinstance(payload, dict):
            raise AwsError(f"{function} replied {str(payload)[:200]!r}, not a JSON object")
        return payload


class FunctionError(Exception):
    """A function invoked for its reply raised ``error_type`` (its class name) saying ``message``."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message
