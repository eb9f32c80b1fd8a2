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
from resumable.store.records import ActionRecord, GrantRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies


class LiveGrants:
    """``StandingGrants`` for one run of a session's turn (``principal``: whose session it is)."""

    def __init__(
        self, deps: Dependencies, session_id: str, principal: str | None, journal: list[ActionRecord] | None = None
    ) -> None:
        self.deps = deps
        self.session_id = session_id
        self.principal = principal
        # The journal entries begun under a grant that may have taken effect, as the run's tree holds them
        # (read after the run took the lease: no other runner can begin one since).
        self._entries = {a.key: a for a in journal or [] if a.grant_id and a.status != "not_run"}
        self._begun = {key: str(a.grant_id) for key, a in self._entries.items()}
        self._read: dict[str, GrantRecord] | None = None
        self._lock = threading.Lock()  # (tools may run on several threads: one read)

    def begun(self, key: str) -> str | None:
        return self._begun.get(key)

    def resumed(self, key: str) -> ActionRecord | None:
        """The entry ``begun`` sent its call back to the journal for, once: the journal gives back what
        became of it, and never begins it anew under the grant (a run that finds it ``not_run`` asks)."""
        return self._entries.pop(key, None)

    def covering(self, tool: str, tool_input: Any, rule: ApprovalRule) -> str | None:
        now = self.deps.clock.now()
        for grant in self._grants(now).values():
            if covers(grant, tool, tool_input, rule, now):
                return grant.grant_id
        return None

    def record(self, grant_id: str) -> GrantRecord:
        """The grant ``covering`` or ``begun`` named: as read; one no longer live is looked up among
        them all (its check then fails: the entry's earlier attempt is given back, or the call asks);
        one the table let go, as a grant that exists nowhere (its check fails alike)."""
        now = self.deps.clock.now()
        found = self._grants(now).get(grant_id)
        if found is None:
            found = next((g for g in self.deps.store.all_grants() if g.grant_id == grant_id), None)
        return found or GrantRecord(
            grant_id=grant_id, scope="session", session_id=self.session_id, tool="", rule="", granted_by="",
            granted_at=0, expires_at=0, root_turn_id="", request_id="", purge_at=0,
        )  # fmt: skip

    def _grants(self, now: float) -> dict[str, GrantRecord]:
        with self._lock:
            if self._read is None:
                live = self.deps.store.live_grants(self.session_id, self.principal, now)
                # (only this session's grants and its principal's: a key prefix alone could match more)
                self._read = {g.grant_id: g for g in live if self._in_scope(g)}
            return self._read

    def _in_scope(self, grant: GrantRecord) -> bool:
        if grant.scope == "session":
            return grant.session_id == self.session_id
        return self.principal is not None and grant.principal == self.principal
