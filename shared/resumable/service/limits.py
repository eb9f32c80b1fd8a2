"""What the service accepts as text: JSON that UTF-8 (and so DynamoDB and S3) can hold."""

from __future__ import annotations

import json
from typing import Any

from resumable.exceptions import ValidationFailedError

_NOT_UTF8 = "holds text that UTF-8 cannot encode (a lone surrogate such as \\ud800): send valid Unicode"


def json_utf8(value: Any, what: str, nothing: str = "nothing was done") -> bytes:
    """``value`` as compact JSON in UTF-8 (its stored form, whose length the size limits count), or
    ``ValidationFailedError`` if it cannot be stored: a string without a UTF-8 form, or nesting too
    deep to encode."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationFailedError(f"{what} {_NOT_UTF8}; {nothing}") from None
    except RecursionError:
        raise ValidationFailedError(f"{what} nests too deeply to be stored; {nothing}") from None
    except (TypeError, ValueError) as error:
        raise ValidationFailedError(f"{what} is not JSON ({error}); {nothing}") from None


def text_utf8(text: str, what: str, nothing: str = "nothing was done") -> bytes:
    """``text`` in UTF-8, or ``ValidationFailedError`` if it holds a lone surrogate."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationFailedError(f"{what} {_NOT_UTF8}; {nothing}") from None


def bounded_text(text: str | None, limit: int) -> str | None:
    """``text``, cut to ``limit`` bytes of UTF-8 with a note saying so (DynamoDB items are small; the
    whole text stays in the snapshot)."""
    if text is None or len(text.encode()) <= limit:
        return text
    return text.encode()[:limit].decode(errors="ignore") + f" [cut at {limit} bytes; the whole text is in the snapshot]"


def bounded_json(value: Any, limit: int) -> Any:
    """``value`` as shown to a person, or a preview of it when its JSON is larger than ``limit``
    bytes (the whole value stays in the snapshot)."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text.encode()) <= limit:
        return value
    return {"truncated": True, "bytes": len(text.encode()), "preview": bounded_text(text, limit // 4)}


def is_preview(value: Any) -> bool:
    """Whether ``value`` is a preview ``bounded_json`` made of a larger value."""
    return isinstance(value, dict) and value.keys() == {"truncated", "bytes", "preview"} and value["truncated"] is True


def bounded_reason(reason: Any, limit: int) -> Any:
    """An interrupt's ``reason`` as a person is shown it, within ``limit`` bytes of JSON: an approval's
    (its ``tool`` and ``input``) keeps what the call is and previews its input; any other, a preview
    of the whole when it is too large."""
    if not (isinstance(reason, dict) and "input" in reason and isinstance(reason.get("tool"), str)):
        return bounded_json(reason, limit)
    if len(json.dumps(reason, ensure_ascii=False).encode()) <= limit:
        return reason
    others = {
        k: bounded_text(v, 1024) if isinstance(v, str) else bounded_json(v, 1024)
        for k, v in reason.items()
        if k != "input"
    }
    room = limit - len(json.dumps(others, ensure_ascii=False).encode()) - 64
    return {**others, "input": bounded_json(reason["input"], max(room, 256))}
