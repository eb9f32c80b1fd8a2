"""Telling a Lambda durable function that the turn it waits on has settled: its callback completed
(``SendDurableExecutionCallbackSuccess`` / ``Failure``), or kept alive while the turn waits for people
(``SendDurableExecutionCallbackHeartbeat``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from resumable.aws.clients import LazyClient, client
from resumable.exceptions import AwsError

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger(__name__)

# A callback Lambda will no longer complete: it timed out or was completed before
# (CallbackTimeoutException), its execution ended or is unknown (ResourceNotFoundException), or its id
# is not one Lambda takes (InvalidParameterValueException). Sending again would change nothing.
_CLOSED = frozenset({"CallbackTimeoutException", "ResourceNotFoundException", "InvalidParameterValueException"})


class CallbackClosedError(Exception):
    """Lambda refused the callback for good (``code``: why); nothing sent now or later reaches it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


class DurableCallbacks(LazyClient["LambdaClient"]):
    """A durable function's callbacks, completed or kept alive. Throttling and transient errors are
    retried by botocore (standard mode); a callback Lambda will no longer complete raises
    ``CallbackClosedError``; any other failure ``AwsError`` (the sweeper sends it again). The client is
    made on first use."""

    service = "lambda"

    @property
    def client(self) -> LambdaClient:
        # Quick to give up: a send that ran long could still be under way when the sweeper sends again
        # (a minute after the settling), and Lambda would refuse that second one as a callback closed.
        if self._client is None:
            self._client = client(self.service, self.settings, attempts=2, timeout=5)
        return self._client

    def succeed(self, callback_id: str, result: str) -> None:
        self._send(
            lambda: self.client.send_durable_execution_callback_success(CallbackId=callback_id, Result=result.encode())
        )

    def fail(self, callback_id: str, error_type: str, message: str, data: str) -> None:
        self._send(
            lambda: self.client.send_durable_execution_callback_failure(
                CallbackId=callback_id, Error={"ErrorType": error_type, "ErrorMessage": message, "ErrorData": data}
            )
        )

    def heartbeat(self, callback_id: str) -> None:
        self._send(lambda: self.client.send_durable_execution_callback_heartbeat(CallbackId=callback_id))

    def _send(self, call: Callable[[], object]) -> None:
        from botocore.exceptions import ClientError

        try:
            call()
        # (what is raised names the failure, never the request: its URL holds the callback id, a credential)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in _CLOSED:
                raise CallbackClosedError(code, "") from None
            raise AwsError(f"telling the durable function failed: Lambda answered {code or 'an error'}") from None
        except Exception as error:
            raise AwsError(f"telling the durable function failed: {error.__class__.__name__}") from None
