"""The operator's use cases (``resumable admin``; docs/runbook.md): which turns are stalled or stuck,
what a turn's records hold, moving one on by hand, and publishing a session's events again.

Only an approver (or the application itself) may use them: they read and move every session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from resumable.clock import iso
from resumable.exceptions import ForbiddenError, NotFoundError, SnapshotError
from resumable.service.access import is_approver, load
from resumable.service.advancing.stall import stall
from resumable.service.caller import Caller
from resumable.service.ids import valid_session_id
from resumable.service.views import TurnView, View
from resumable.store.records import InteractionRecord, TurnRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

# As far in the future as the index's due times go: a stuck turn's next try is within the hour.
_EVER = 100 * 365 * 86400.0
# How many of each (stuck, stalled) one listing shows at most: each costs a read of its tree.
MAX_STALLED = 50


class StalledTurn(View):
    """An unsettled turn nobody is moving on: ``stuck`` if the sweeper gave up on it, else ``why``
    (service.stall) says what the sweeper will do with it."""

    session_id: str
    turn_id: str
    status: str
    why: str | None = Field(
        description="question_expired, cancel_unsettled, answered_unresumed, runner_gone, checkpointed"
    )
    stuck: bool = Field(description="The sweeper moved it on 3 times and it did not move: it waits for an operator.")
    sweeps: int
    due_at: str | None
    updated_at: str | None
    error: str | None


class StalledTurns(View):
    turns: list[StalledTurn]


class SnapshotState(View):
    key: str
    pointed_at_by: list[str] = Field(description="The fields that point at it: snapshot_key, base_snapshot_key, ...")
    state: str = Field(description="'loads', or why it cannot be loaded (missing, not JSON)")


class TurnRecords(View):
    """A turn tree as stored: the root and child turns, interactions, the action journal's entries and
    the outbox items (each with its number once published), the snapshots the root points at and
    whether each loads, and where the turn is in the sweeper's index."""

    turns: list[dict[str, Any]]
    interactions: list[dict[str, Any]]
    journal: list[dict[str, Any]]
    outbox: list[dict[str, Any]]
    snapshots: list[SnapshotState]
    index: dict[str, Any] | None


class Republished(View):
    session_id: str
    republished: int = Field(description="How many unpublished outbox items the publisher is given again.")


def _operator(deps: Dependencies, caller: Caller | None) -> None:
    if caller is not None and not is_approver(deps.settings, caller):
        raise ForbiddenError(
            "the admin routes are for operators: only an approver (APPROVER_PRINCIPALS, APPROVER_GROUPS) may use "
            "them; nothing was done"
        )


def stalled(deps: Dependencies, caller: Caller | None, limit: int) -> StalledTurns:
    """The turns the sweeper gave up on, then those stalled now (the sweeper moves these on at its
    next run, unless it is not running): at most ``limit`` of each."""
    _operator(deps, caller)
    now = deps.clock.now()
    found: list[StalledTurn] = []
    for due in [*deps.store.due_turns(now + _EVER, limit, stuck=True), *deps.store.due_turns(now, limit)]:
        tree = deps.store.load_tree(due.root.session_id, due.root.turn_id)
        if tree is None or tree.root.settled:
            continue
        why = stall(tree, now)
        if why is None and not due.stuck:
            continue
        found.append(_stalled(tree.root, why, due.stuck, due.due_at))
    return StalledTurns(turns=found)


def _stalled(root: TurnRecord, why: str | None, stuck: bool, due_at: float) -> StalledTurn:
    return StalledTurn(
        session_id=root.session_id,
        turn_id=root.turn_id,
        status=root.status,
        why=why,
        stuck=stuck,
        sweeps=root.sweeps,
        due_at=iso(due_at),
        updated_at=iso(root.updated_at),
        error=root.error,
    )


def _empty(record: type[TurnRecord] | type[InteractionRecord], *, unless: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in record.model_fields.items()
        if not field.is_required() and name not in unless
    }


def inspect(deps: Dependencies, session_id: str, turn_id: str, caller: Caller | None) -> TurnRecords:
    """Everything stored of the turn's tree (see ``TurnRecords``)."""
    _operator(deps, caller)
    root = load(deps, session_id, turn_id).root  # 404 as any read would
    items = deps.store.tree_items(session_id, root.turn_id)
    by_entity: dict[str, list[dict[str, Any]]] = {}
    # What a turn's or a question's item leaves out as empty (``codec.present``), shown as the record reads
    # it, so that every item of a kind shows the same fields (a durable function's only where one waits).
    empty = {
        "turn": _empty(TurnRecord, unless=("callback_id", "callback_told", "callback_heartbeat", "task_token")),
        "interaction": _empty(InteractionRecord),
    }
    for item in items:
        # (a workflow's task token and a durable function's callback id are credentials: never shown)
        shown = {k: v for k, v in item.items() if k not in ("pk", "task_token", "callback_id")}
        waited = {"callback_told": None, "callback_heartbeat": None} if "callback_id" in item else {}
        shown = {**empty.get(str(item.get("entity")), {}), **waited, **shown}
        by_entity.setdefault(str(item.get("entity")), []).append(shown)
    pointers: dict[str, list[str]] = {}
    fields = {"snapshot_key": [root.snapshot_key], "base_snapshot_key": [root.base_snapshot_key]}
    fields |= {"agent_snapshots": list(root.agent_snapshots.values())}
    fields |= {"base_agent_snapshots": list((root.base_agent_snapshots or {}).values())}
    for field, keys in fields.items():
        for key in keys:
            if key:
                pointers.setdefault(key, []).append(field)
    stored = next((i for i in items if i.get("sk") == f"TURN#{root.turn_id}"), {})
    return TurnRecords(
        turns=by_entity.get("turn", []),
        interactions=by_entity.get("interaction", []),
        journal=by_entity.get("action", []),
        outbox=[{**e, "published": e.get("published_at") is not None} for e in by_entity.get("event", [])],
        snapshots=[SnapshotState(key=k, pointed_at_by=f, state=_loads(deps, k)) for k, f in pointers.items()],
        index={"partition": stored["gsi4pk"], "dueAt": iso(float(stored["gsi4sk"]))} if "gsi4pk" in stored else None,
    )


def _loads(deps: Dependencies, key: str) -> str:
    """'loads', or what is wrong with the snapshot (the store's words, without its address)."""
    try:
        deps.snapshots.get(key)
    except SnapshotError as error:
        said = str(error)
        return said.split(f"{key} ", 1)[-1].split(":", 1)[0]  # "does not exist", "is not JSON (...)"
    return "loads"


def recover_turn(deps: Dependencies, session_id: str, turn_id: str, caller: Caller | None) -> TurnView:
    """``recover``, by an operator: move the turn on as a read or the sweeper would, now."""
    _operator(deps, caller)
    from resumable.service.advancing.recover import recover  # (it loads the agent loop's modules: only when used)

    load(deps, session_id, turn_id)  # 404 as any read would (recover itself trusts its caller)
    return recover(deps, session_id, turn_id)


def republish(deps: Dependencies, session_id: str, caller: Caller | None) -> Republished:
    """Give the publisher the session's unpublished outbox items again (an outbox that did not drain)."""
    _operator(deps, caller)
    session = deps.store.get_session(session_id) if valid_session_id(session_id) else None
    if session is None or session.deleted or session.expired(deps.clock.now()):
        # A deleted session publishes nothing after its deletion; one past its retention is gone.
        raise NotFoundError(f"there is no session {session_id!r}; nothing was published again")
    return Republished(session_id=session_id, republished=deps.store.republish(session_id, deps.clock.now()))
