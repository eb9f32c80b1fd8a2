"""Invoking a Lambda function asynchronously: how a checkpointed turn is continued."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from resumable.config import Settings
from resumable.exceptions import StoreError

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient


class Lambdas:
    """``Invoke`` with ``InvocationType=Event``. The client is made on first use."""

    def __init__(self, settings: Settings, client: LambdaClient | None = None) -> None:
        self.settings = settings
        self._client = client

    @property
    def client(self) -> LambdaClient:
        if self._client is None:
            from resumable.store.clients import client

            self._client = client("lambda", self.settings)
        return self._client

    def invoke_async(self, function: str, event: dict[str, Any]) -> None:
        """Queue ``event`` for ``function`` (name or ARN); Lambda runs it, and retries it twice if it fails."""
        try:
            self.client.invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(event).encode())
        except Exception as error:
            raise StoreError(f"invoking {function} asynchronously failed: {error}") from error
