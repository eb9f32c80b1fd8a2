"""Telling a Step Functions workflow that the turn it waits on has settled (the callback pattern)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient  # noqa: F401 (the string type argument of LazyClient below)

logger = logging.getLogger(__name__)

# A task that is no longer open: it timed out, was answered before, or its execution ended. The
# workflow has moved on, so there is nobody left to tell: the outcome counts as delivered.
_CLOSED = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})

Delivery = Literal["delivered", "closed"]


class TaskTokens(LazyClient["SFNClient"]):
    """``SendTaskSuccess`` / ``SendTaskFailure`` for task tokens. Throttling and transient errors are
    retried by botocore (standard mode); any other failure raises ``AwsError`` (the workflow's own
    timeout, and ``recover``, are the backstop). The client is made on first use."""

    service = "stepfunctions"

    def succeed(self, token: str, output: str) -> Delivery:
        return self._send(lambda: self.client.send_task_success(taskToken=token, output=output))

    def fail(self, token: str, error: str, cause: str) -> Delivery:
        return self._send(lambda: self.client.send_task_failure(taskToken=token, error=error, cause=cause))

    def _send(self, call: Callable[[], object]) -> Delivery:
        from botocore.exceptions import ClientError

        try:
            call()
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code in _CLOSED:
                logger.info("the workflow's task is already closed (%s): nothing left to tell", code)
                return "closed"
            raise AwsError(f"telling the workflow failed: {error}. The turn itself is settled") from error
        except Exception as error:
            raise AwsError(f"telling the workflow failed: {error}. The turn itself is settled") from error
        return "delivered"
