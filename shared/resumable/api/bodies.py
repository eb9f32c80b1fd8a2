"""The one reader of request bodies: a JSON object, bounded, that DynamoDB and UTF-8 can hold.

Every route that takes a body reads it here (it is the resolver's JSON deserializer), before any
route runs, so a hostile body is refused the same way whatever session it names and nothing is
written:

| the body | status | code |
|---|---|---|
| not JSON (a form, text, ``NaN``) | 400 | ``bad_request`` |
| JSON, but not an object (``[]``, ``"x"``, ``5``) | 400 | ``bad_request`` |
| larger than ``MAX_BODY_BYTES`` | 422 | ``validation_failed`` |
| a number no float holds (``1e400``), or of more than 4,300 digits | 422 | ``validation_failed`` |
| nested deeper than ``MAX_DEPTH`` | 422 | ``validation_failed`` |
| a string UTF-8 cannot hold (a lone surrogate escape such as ``"\\ud800"``) | 422 | ``validation_failed`` |

The API speaks JSON only: whatever ``Content-Type`` a request claims, its body is read as JSON.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from resumable.exceptions import BadRequestError, ValidationFailedError
from resumable.service.limits import json_utf8

MAX_DEPTH = 64
"""How deeply arrays and objects may nest in a body (a prompt is 1 level, an answer a few)."""

MAX_BODY_BYTES = 128 * 1024
"""The largest body read: a prompt at its limit (16,000 characters of up to 4 bytes) with room to spare."""

# A JSON string (skipped whole, so brackets inside it do not count) or one bracket.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class _UnrepresentableError(ValueError):
    """A JSON number this API cannot hold."""


_MAX_DIGITS = 4_300  # Python's own limit on converting decimal text to int


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _UnrepresentableError(f"the number {text[:40]} is too large for a 64-bit float")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > _MAX_DIGITS:
        raise _UnrepresentableError(f"a number has {len(text)} digits, the limit is {_MAX_DIGITS}")
    return int(text)


_KINDS = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number", bool: "true/false"}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest, counted without parsing it (no recursion)."""
    deepest = level = 0
    for token in _TOKENS.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            level += 1
            deepest = max(deepest, level)
        elif bracket in "]}":
            level -= 1
    return deepest


def read_json_object(text: str | None) -> dict[str, Any]:
    """The body as a JSON object, or ``BadRequestError`` / ``ValidationFailedError`` saying why not."""
    if not text or not text.strip():
        raise BadRequestError('the body is empty: it must be a JSON object such as {"prompt": "..."}; nothing was done')
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_BODY_BYTES:
        raise ValidationFailedError(f"the body is {size} bytes, the limit is {MAX_BODY_BYTES}; nothing was done")
    nested = depth(text)
    if nested > MAX_DEPTH:
        raise ValidationFailedError(
            f"the body nests arrays and objects {nested} levels deep, the limit is {MAX_DEPTH}; nothing was done"
        )
    try:
        value = json.loads(text, parse_float=_finite, parse_int=_bounded_int, parse_constant=_no_constant)
    except _UnrepresentableError as error:
        raise ValidationFailedError(f"the body is JSON this API cannot hold: {error}; nothing was done") from None
    except ValueError as error:
        raise BadRequestError(
            f"the body must be a JSON object (send Content-Type: application/json), and it is not JSON: {error}; "
            "nothing was done"
        ) from None
    if not isinstance(value, dict):
        raise BadRequestError(
            f"the body must be a JSON object, not {_KINDS.get(type(value), 'null')}; nothing was done"
        )
    json_utf8(value, "the body")
    return value
