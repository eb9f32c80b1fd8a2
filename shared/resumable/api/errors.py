"""Errors at the HTTP edge: every error reply is ``{"code", "message"}``, and each code's HTTP status is
decided here, once."""

from __future__ import annotations

from typing import Any, Literal

from aws_lambda_powertools.event_handler import Response
from pydantic import BaseModel, ConfigDict

ErrorCode = Literal[
    "bad_request",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "conflict",
    "turn_busy",
    "gone",
    "validation_failed",
    "aws_failed",
    "internal",
]

# The HTTP status of each error code: the one place it is decided.
HTTP_STATUS: dict[str, int] = {
    "bad_request": 400,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "turn_busy": 409,
    "gone": 410,
    "validation_failed": 422,
    "aws_failed": 500,
    "internal": 500,
}


class ErrorBody(BaseModel):
    """Every error reply: a machine-readable ``code`` and a ``message`` saying what did not happen and
    what to do."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    code: ErrorCode
    message: str
    answered: dict[str, Any] | None = None
    """On a 409 ``conflict``: the answer that stands (``by``, ``at``, ``via``, ``decision``, and
    ``yours``: whether the caller gave it)."""


def error_response(
    code: ErrorCode, message: str, headers: dict[str, str] | None = None, answered: dict[str, Any] | None = None
) -> Response[Any]:
    return Response(
        status_code=HTTP_STATUS[code],
        content_type="application/json",
        body=ErrorBody(code=code, message=message, answered=answered).model_dump_json(exclude_none=True),
        headers=headers,
    )
