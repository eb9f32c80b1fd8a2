"""The action journal of a leased run: an approved action runs at most once per approval.

Before the action runs, one transaction records that it started and renews the run's lease (it
requires that the run still holds the turn and no cancel was requested); after, another records its
result (and checks the run still holds the turn). In between:

- right before the action, the run checks that it still holds the lease: by its own clock when at
  least half of the lease it just renewed is left, else by renewing it (a run that was frozen past
  that point learns it lost the turn, records the action ``not_run`` and stops: it never runs);
- while the action runs, a heartbeat renews the lease, so a live runner never loses the turn;
- the action gets a ``FencingToken`` (the approval's key and the lease's generation) for systems that
  can refuse a stale write.

A re-run (after a crash, a takeover, a duplicate delivery) finds the entry: a finished action's
result is given back without running it again; one that never ran runs now; one started and never
finished is not run again: the model is told its outcome is unknown, and the turn lists it among its
actions in doubt, with whatever becomes known later (a result recorded late, or ``not_run``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from resumable.exceptions import (
    ActionFencedError,
    ActionOutcomeUnknownError,
    AwsError,
    GrantLapsedError,
    LeaseLostError,
)
from resumable.runtime.interrupts import InterruptException
from resumable.runtime.invocation import ApprovedAction, FencingToken
from resumable.runtime.tools import tool_result
from resumable.service.advancing.lease import LeaseGuard
from resumable.service.audit.entries import action_entry
from resumable.service.grants.applying import LiveGrants
from resumable.service.grants.giving import audited
from resumable.service.ids import request_id
from resumable.service.limits import bounded_json
from resumable.store.outbox import action_granted
from resumable.store.records import ActionRecord, AuditOutcome, AuditRecord, GrantRecord

logger = logging.getLogger(__name__)

UNKNOWN_OUTCOME = (
    "The outcome of this approved action is UNKNOWN: an earlier attempt started it and stopped before its "
    "result was recorded. It was NOT run again. Do not report it as done or as not done; tell the user to "
    "check whether it took effect before asking for it again."
)

# What an action's entry may hold of its input, to show a person; the whole input is in the snapshot.
MAX_INPUT_BYTES = 4 * 1024


class LeasedActionJournal:
    """``ActionJournal`` for the approved actions of one leased run of a root turn's tree.
    ``turn_of`` names the (root or child) turn an action's key belongs to; ``rules``, the approval rule
    (its name) each question asked under one was, by request id."""

    def __init__(
        self,
        lease: LeaseGuard,
        turn_of: Callable[[str], str],
        rules: dict[str, str] | None = None,
        grants: LiveGrants | None = None,
    ) -> None:
        self.lease = lease
        self.grants = grants
        self.granted: dict[str, GrantRecord] = {}
        self.resuming: set[str] = set()  # (the entries begun under a grant by an earlier run, resumed)
        self.store = lease.deps.store
        self.clock = lease.deps.clock
        self.session_id = lease.root.session_id
        self.root_turn_id = lease.root.turn_id
        self.turn_of = turn_of
        self.rules = rules or {}
        # Every action entry as this run last wrote or read it (the turn it commits shows them).
        self.known: dict[str, ActionRecord] = {}

    def run(self, action: ApprovedAction, perform: Callable[[FencingToken], dict[str, Any]]) -> dict[str, Any]:
        now = self.clock.now()
        record = ActionRecord(
            key=action.key,
            status="started",
            turn_id=self.turn_of(action.key),
            tool=action.tool,
            agent_path=list(action.agent_path),
            input=bounded_json(action.input, MAX_INPUT_BYTES),
            lease_generation=self.lease.generation,
            started_at=now,
            grant_id=action.grant,
        )
        until = now + self.lease.deps.settings.lease_seconds
        if action.grant is not None and self.grants is None:
            raise GrantLapsedError(f"no grants are read in this run: the approved action {action.key!r} asks instead")
        grant = self.grants.record(action.grant) if action.grant is not None and self.grants is not None else None
        if grant is not None and grant.granted_by:  # (not one the table let go)
            self.granted[record.key] = grant  # (an earlier attempt's records name it too)
        if action.grant is not None and self.grants is not None and action.key in self.resuming:
            raise GrantLapsedError(  # (the entry it began under a grant never ran: a person decides now)
                f"the approved action {action.key!r} began under a grant and never ran: it asks instead"
            )
        resumed = self.grants.resumed(action.key) if self.grants is not None else None
        if resumed is not None:  # (begun under a grant by an earlier run: what became of it, never anew)
            self.resuming.add(action.key)
            return self._from_earlier(action, resumed, perform)
        told = action_granted(self.root_turn_id, self._request_id(record), record, grant) if grant else None
        earlier = self.store.begin_action(
            self.session_id, self.root_turn_id, record, self.lease.lease_owner, until, grant, told
        )
        if earlier is not None:
            return self._from_earlier(action, earlier, perform)
        if grant is not None:
            logger.info(
                "turn_id=<%s>, action=<%s> | approved without a question: grant %s by %s (%s)",
                self.root_turn_id,
                action.key,
                grant.grant_id,
                grant.granted_by,
                grant.rule,
            )
        self.known[record.key] = record
        self.lease.extended(until)
        self._still_leased(record, action.input)
        token = FencingToken(
            record.key,
            record.lease_generation,
            self.store.action_fence(self.session_id, self.root_turn_id, record),
        )
        try:
            with self.lease.kept_alive():
                result = perform(token)
        except InterruptException:
            # The action paused before doing anything: it has not started after all.
            self.store.abandon_action(self.session_id, self.root_turn_id, action.key)
            raise
        except ActionOutcomeUnknownError as unknown:
            # Whether it took effect is unknown: in doubt, as a takeover finds an unfinished one.
            now = self.clock.now()
            entry = self._audit(record, "unknown", now, action.input)
            earlier = self.store.mark_action_unknown(self.session_id, self.root_turn_id, action.key, now, entry)
            self.known[earlier.key] = earlier
            logger.error(
                "turn_id=<%s>, action=<%s> | approved action's outcome is unknown: %s",
                self.root_turn_id,
                action.key,
                unknown,
            )
            return tool_result(
                action.tool_use_id,
                f"The outcome of this approved action is UNKNOWN: it started and no answer came ({unknown}). It "
                "will NOT be run again. Do not report it as done or as not done; tell the user to check whether it "
                "took effect before asking for it again.",
                "error",
            )
        except ActionFencedError:
            self._not_run(record, "its fence refused it: a newer attempt took the turn over", action.input)
            raise LeaseLostError(
                f"turn {self.root_turn_id} was taken over while the approved action {action.key!r} was about to "
                "run: its fence refused it, it did not run, and this run stops without committing"
            ) from None
        now = self.clock.now()
        outcome: AuditOutcome = "failed" if result.get("status") == "error" else "ran"
        in_time = self.store.finish_action(
            self.session_id,
            self.root_turn_id,
            record,
            result,
            now,
            self.lease.lease_owner,
            self._audit(record, outcome, now, action.input),
        )
        self.known[record.key] = record.model_copy(
            update={"status": "finished", "result": result, "finished_at": now, "late": not in_time}
        )
        if not in_time:
            logger.error(
                "turn_id=<%s>, action=<%s> | approved action finished after its run lost the turn: its result is "
                "recorded as late and reported",
                self.root_turn_id,
                action.key,
            )
        return result

    def _audit(self, record: ActionRecord, outcome: AuditOutcome, now: float, ran_with: Any) -> AuditRecord:
        """The audit trail's record of what became of the action (``ran_with``: the input it was given)."""
        rule = self.rules.get(self._request_id(record))
        root = self.lease.root  # (who started the turn, as its questions hold it)
        started_by = root.started_by if root.started_by is not None else root.principal
        deps = self.lease.deps
        grant = self.granted.get(record.key)
        named = audited(grant) if grant is not None else {"id": record.grant_id} if record.grant_id else None
        if grant is not None:
            rule = grant.rule
        return action_entry(
            deps, self.root_turn_id, self.session_id, record, outcome, now, ran_with, rule, started_by, named
        )

    def _request_id(self, record: ActionRecord) -> str:
        """The id of the call's question (the one it would have had, where a grant approved it)."""
        return request_id(self.root_turn_id, record.key)

    def _still_leased(self, record: ActionRecord, ran_with: Any) -> None:
        """Right before the action runs: the run must still hold the turn, else the action never runs."""
        if self.lease.surely_held():
            return
        try:
            self.lease.renew()
        except (LeaseLostError, AwsError):
            self._not_run(record, "the run lost the turn before it", ran_with)
            raise

    def _not_run(self, record: ActionRecord, why: str, ran_with: Any) -> None:
        now = self.clock.now()
        entry = self._audit(record, "not_run", now, ran_with)
        self.store.mark_action_not_run(self.session_id, self.root_turn_id, record, now, entry)
        self.known[record.key] = record.model_copy(update={"status": "not_run", "finished_at": now})
        logger.error(
            "turn_id=<%s>, action=<%s> | the approved action did NOT run: %s", self.root_turn_id, record.key, why
        )

    def _from_earlier(
        self, action: ApprovedAction, earlier: ActionRecord, perform: Callable[[FencingToken], dict[str, Any]]
    ) -> dict[str, Any]:
        if earlier.status == "started":
            # Nobody knows whether it took effect; unless its runner records what happened meanwhile,
            # that is what the model is told, and the turn shows it in doubt.
            now = self.clock.now()
            entry = self._audit(earlier, "unknown", now, action.input)
            earlier = self.store.mark_action_unknown(self.session_id, self.root_turn_id, action.key, now, entry)
            self.known[earlier.key] = earlier
            if earlier.status == "started":
                logger.error(
                    "turn_id=<%s>, action=<%s> | approved action started earlier and never finished: not running it "
                    "again",
                    self.root_turn_id,
                    action.key,
                )
                return tool_result(action.tool_use_id, UNKNOWN_OUTCOME, "error")
        if earlier.status == "not_run":
            logger.info(
                "turn_id=<%s>, action=<%s> | approved action never ran: running it", self.root_turn_id, action.key
            )
            return self.run(action, perform)
        logger.info(
            "turn_id=<%s>, action=<%s> | approved action already ran, its result is reused",
            self.root_turn_id,
            action.key,
        )
        return {**(earlier.result or {}), "toolUseId": action.tool_use_id}
