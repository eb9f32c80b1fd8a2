"""Cursors of the inbox and the audit trail: where the next page starts, signed, so that only a cursor
this listing issued, as it issued it and for the same inbox or query, starts a page (any other is
refused before anything is read). ``secret`` is the cursor key (resumable.aws.keys.CursorKey)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

from resumable.exceptions import ValidationFailedError

MAX_CURSOR_CHARS = 2048


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: str, partition: str, payload: str) -> str:
    return _b64(hmac.new(secret.encode(), f"{partition}\n{payload}".encode(), hashlib.sha256).digest()[:16])


def issue(start: dict[str, Any], partition: str, secret: str) -> str:
    """The cursor of the page that starts after ``start`` in the listing ``partition`` (an inbox, a query)."""
    payload = _b64(json.dumps(start, sort_keys=True, separators=(",", ":")).encode())
    return f"{payload}.{_mac(secret, partition, payload)}"


def read(cursor: str, partition: str, secret: str, *, shapes: Iterable[frozenset[str]], listing: str) -> dict[str, Any]:
    """Where the page of ``cursor`` starts; ``ValidationFailedError`` for a cursor ``listing`` (this
    inbox, this listing) did not issue for ``partition``, one that was changed, or one of another inbox
    or query. It holds the fields of one of ``shapes``, each a string."""
    refused = ValidationFailedError(
        f"query parameter 'cursor' is not one {listing} issued for you (or it was changed, or the other query "
        "parameters are not those it was issued with): send the cursor of the previous page as it came, with "
        "the same query, or none for the first page; nothing was listed"
    )
    start = verified(cursor, partition, secret) if len(cursor) <= MAX_CURSOR_CHARS else None
    if start is None:
        raise refused
    if start.keys() not in [set(shape) for shape in shapes] or not all(
        isinstance(v, dict) and v.keys() == {"S"} and isinstance(v["S"], str) for v in start.values()
    ):
        raise refused
    return start


def verified(token: str, partition: str, secret: str) -> dict[str, Any] | None:
    """What ``token`` holds, if ``issue`` made it for ``partition`` with ``secret`` (a JSON object); else None."""
    payload, _, mac = token.partition(".")
    # (a token this issued is base64url: compare_digest takes only ASCII)
    if not token.isascii() or not hmac.compare_digest(mac, _mac(secret, partition, payload)):
        return None
    try:
        held = json.loads(_unb64(payload))
    except (binascii.Error, ValueError):
        return None
    return held if isinstance(held, dict) else None
