"""Ids the service makes, and the checks of ids callers send.

A root turn id is 32 hex digits (random; derived from the callback id for a turn a durable function
waits on); a child turn's id is its root's id, ``~`` and 16 hex digits derived
from the sub-agent call, so any turn id names its root. A request id is derived from the root turn
and the interrupt id, so the same pause always maps to the same interaction.
"""

from __future__ import annotations

import hashlib
import re
import uuid

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_TURN_ID = re.compile(r"^[0-9a-f]{32}(~[0-9a-f]{16})?$")
_REQUEST_ID = re.compile(r"^r[0-9a-f]{24}$")


def new_root_turn_id() -> str:
    return uuid.uuid4().hex


def callback_turn_id(session_id: str, callback_id: str) -> str:
    """The root turn a durable function's callback starts in ``session_id``: derived from both (the
    callback id is unique to one callback of one execution), so however often its submitter runs, it
    names the same turn, and no other session's turn has its id."""
    return hashlib.sha256(f"durable callback\n{session_id}\n{callback_id}".encode()).hexdigest()[:32]


def child_turn_id(root_turn_id: str, call_prefix: str) -> str:
    return f"{root_turn_id}~{hashlib.sha256(call_prefix.encode()).hexdigest()[:16]}"


def root_of(turn_id: str) -> str:
    return turn_id.split("~", 1)[0]


def request_id(root_turn_id: str, interrupt_id: str) -> str:
    return "r" + hashlib.sha256(f"{root_turn_id}\n{interrupt_id}".encode()).hexdigest()[:24]


def valid_session_id(session_id: object) -> bool:
    return isinstance(session_id, str) and bool(_SESSION_ID.match(session_id))


def valid_turn_id(turn_id: object) -> bool:
    return isinstance(turn_id, str) and bool(_TURN_ID.match(turn_id))


def valid_request_id(value: object) -> bool:
    return isinstance(value, str) and bool(_REQUEST_ID.match(value))
