"""The standing grants a run applies: read once, when the first call that one could cover needs
approval (two consistent queries: the session's grants and its principal's), then kept for the run.
What is read only lets a call try: the journal's entry of the call begins in a transaction that checks
the grant again (``store.grants.grant_check``), so a grant revoked or expired by then approves nothing,
and the call asks a person instead (``GrantLapsedError``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from resumable.runtime.rules import ApprovalRule
from resumable.service.grants.giving import covers
from resumable.store.records import GrantRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies


class LiveGrants:
    """``StandingGrants`` for one run of a session's turn (``principal``: whose session it is)."""

    def __init__(self, deps: Dependencies, session_id: str, principal: str | None) -> None:
        self.deps = deps
        self.session_id = session_id
        self.principal = principal
        self._read: dict[str, GrantRecord] | None = None
        self._lock = threading.Lock()  # (tools may run on several threads: one read)

    def covering(self, tool: str, tool_input: Any, rule: ApprovalRule) -> str | None:
        now = self.deps.clock.now()
        for grant in self._grants(now).values():
            if grant.live(now) and covers(grant, tool, tool_input, rule):
                return grant.grant_id
        return None

    def record(self, grant_id: str) -> GrantRecord:
        """The grant ``covering`` named, as read."""
        return self._grants(self.deps.clock.now())[grant_id]

    def _grants(self, now: float) -> dict[str, GrantRecord]:
        with self._lock:
            if self._read is None:
                live = self.deps.store.live_grants(self.session_id, self.principal, now)
                self._read = {g.grant_id: g for g in live}
            return self._read
