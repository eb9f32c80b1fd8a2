"""Invoking a Lambda function asynchronously: how a checkpointed turn is continued."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient  # noqa: F401 (the string type argument of LazyClient below)


class Lambdas(LazyClient["LambdaClient"]):
    """``Invoke`` with ``InvocationType=Event``. The client is made on first use."""

    service = "lambda"

    def invoke_async(self, function: str, event: dict[str, Any]) -> None:
        """Queue ``event`` for ``function`` (name or ARN); Lambda runs it, and retries it twice if it fails."""
        try:
            self.client.invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(event).encode())
        except Exception as error:
            raise AwsError(f"invoking {function} asynchronously failed: {error}") from error
