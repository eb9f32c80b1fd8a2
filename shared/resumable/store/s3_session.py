"""S3Session: a Session for agents that keep their own context (``preserve_context=True``).

Each save writes a new immutable object; the service commits each agent's latest snapshot key with
the turn, in the same transaction. A crash before that commit leaves the committed keys as they
were, so the agent's state never runs ahead of its orchestrator's.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from resumable.store.base import Snapshots


class S3Session:
    """Snapshots of a session's context-preserving agents, under ``sessions/<sessionId>/agents/<name>/``."""

    def __init__(self, snapshots: Snapshots, session_id: str, snapshot_keys: dict[str, str]) -> None:
        self.snapshots = snapshots
        self.session_id = session_id
        self.snapshot_keys = dict(snapshot_keys)
        self.written: list[str] = []

    def load(self, agent_name: str) -> dict[str, Any] | None:
        key = self.snapshot_keys.get(agent_name)
        if key is None:
            return None
        snapshot: dict[str, Any] = self.snapshots.get(key)
        return snapshot

    def save(self, agent_name: str, snapshot: dict[str, Any]) -> None:
        key = f"sessions/{quote(self.session_id, safe='')}/agents/{quote(agent_name, safe='')}/{uuid.uuid4().hex}.json"
        key = self.snapshots.put(key, snapshot)
        self.written.append(key)
        self.snapshot_keys[agent_name] = key
