"""start-turn: begin a root turn in a session and run it until it pauses or ends."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from resumable.clock import iso
from resumable.exceptions import NotFoundError, TurnBusyError, ValidationFailedError
from resumable.service.access import may_act_for
from resumable.service.advancing.advance import run_leased
from resumable.service.caller import Caller, identity_of, principal_of
from resumable.service.ids import callback_turn_id, new_root_turn_id, valid_session_id
from resumable.service.limits import text_utf8
from resumable.service.retention import retire
from resumable.service.views import TurnView
from resumable.store.records import SessionRecord, TurnRecord, TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

MIN_HEARTBEAT_SECONDS = 300
"""The shortest heartbeat timeout a durable function may ask for: the sweeper sends a heartbeat every
third of it and runs every minute, and a run holding the turn's lease (90 s deployed, 120 by default)
puts its next look off until the lease ends."""


def start_turn(
    deps: Dependencies,
    session_id: str,
    prompt: Any,
    caller: Caller | None,
    workflow: bool,
    callback_id: str | None = None,
    heartbeat_seconds: int | None = None,
) -> TurnView:
    """Create the root turn (refused while the session has an unsettled one), run it, commit.

    With ``callback_id`` (a Lambda durable function's callback, which the function waits on), the turn's
    id is derived from it: a start that finds that turn already begun (the function's submitter run
    again, after a replay or a retry, or two of it at once) returns it as it is now, and starts nothing.
    ``heartbeat_seconds``: the function's heartbeat timeout, which the sweeper keeps while the turn waits."""
    if not valid_session_id(session_id):
        raise ValidationFailedError(
            f"session id {session_id!r} is not valid: use 1-128 letters, digits, '.', '_', ':' or '-', starting "
            "with a letter or digit; nothing was started"
        )
    if not isinstance(prompt, str):
        raise ValidationFailedError("the prompt must be a string; nothing was started")
    if not prompt.strip():
        raise ValidationFailedError("the prompt is blank; nothing was started")
    limit = deps.settings.max_prompt_chars
    if len(prompt) > limit:
        raise ValidationFailedError(
            f"the prompt has {len(prompt)} characters, the limit is {limit}; nothing was started"
        )
    text_utf8(prompt, "the prompt", "nothing was started")
    if workflow and callback_id is not None:
        raise ValidationFailedError(
            "a turn is waited on by a state machine (workflow) or a durable function (callbackId), not both; "
            "nothing was started"
        )
    if heartbeat_seconds is not None and (callback_id is None or heartbeat_seconds < MIN_HEARTBEAT_SECONDS):
        raise ValidationFailedError(
            f"a heartbeat of {heartbeat_seconds} s cannot be kept: heartbeats are for a durable function's callback, "
            f"at least {MIN_HEARTBEAT_SECONDS} s apart (the sweeper, which sends them, runs every minute and waits "
            "out a run's lease); nothing was started"
        )

    store, now = deps.store, deps.clock.now()
    turn_id = new_root_turn_id() if callback_id is None else callback_turn_id(session_id, callback_id)
    if callback_id is not None and (begun := _begun(deps, session_id, turn_id, prompt, caller)) is not None:
        return begun
    seen = store.get_session(session_id)
    # A session whose retention ended is gone: its id starts a new one, in its place.
    replaced, seen = (seen, None) if seen is not None and seen.expired(now) else (None, seen)
    if seen is not None and not may_act_for(deps.settings, seen.principal, caller):
        raise NotFoundError(f"there is no session {session_id!r} you may use; nothing was started")
    if seen is not None and seen.deleted:
        raise TurnBusyError(
            f"session {session_id!r} was deleted (it can be restored until {iso(seen.purge_at)}): restore it with "
            f"POST /sessions/{session_id}/restore, or use another session id; nothing was started"
        )
    # (the same callback's start began it since this one looked)
    began_meanwhile = callback_id is not None and seen is not None and seen.active_turn_id == turn_id
    if began_meanwhile and (begun := _begun(deps, session_id, turn_id, prompt, caller)) is not None:
        return begun
    if seen is not None and seen.active_turn_id is not None:
        raise TurnBusyError(
            f"session {session_id!r} has a turn that is not settled yet ({seen.active_turn_id}): answer its "
            "interactions or cancel it, then start a new one; nothing was started"
        )
    lease_owner = uuid.uuid4().hex
    root = TurnRecord(
        session_id=session_id,
        turn_id=turn_id,
        root_turn_id=turn_id,
        agent="",
        agent_path=[],
        status="running",
        version=1,
        lease_owner=lease_owner,
        lease_generation=1,
        lease_expires_at=now + deps.settings.lease_seconds,
        base_snapshot_key=seen.snapshot_key if seen else None,
        agent_snapshots=dict(seen.agent_snapshots) if seen else {},
        base_agent_snapshots=dict(seen.agent_snapshots) if seen else {},
        prompt=prompt,
        principal=seen.principal if seen else principal_of(caller),
        started_by=identity_of(caller),  # (``application``: no principal, not the session's owner, started it)
        started_by_name=caller.shown_name if caller is not None else None,
        workflow=workflow,
        callback_id=callback_id,
        callback_heartbeat=heartbeat_seconds,
        created_at=now,
        updated_at=now,
    )
    session = (
        seen or SessionRecord(session_id=session_id, principal=principal_of(caller), created_at=now, updated_at=now)
    ).model_copy(update={"active_turn_id": turn_id, "updated_at": now})
    if not store.begin_turn(seen, session, root):
        if callback_id is not None and (begun := _begun(deps, session_id, turn_id, prompt, caller)) is not None:
            return begun  # (the same callback's start, at the same moment)
        raise TurnBusyError(
            f"session {session_id!r} started another turn at the same moment: nothing was started; "
            "get the session's turn and answer or cancel it"
        )
    if replaced is not None:
        # Its conversation is no record's any more (its turns' retention ended before its own).
        retire(deps, sorted(replaced.snapshots))
    return TurnView.of(run_leased(deps, TurnTree(root=root, children=[], interactions=[]), lease_owner))


def _begun(deps: Dependencies, session_id: str, turn_id: str, prompt: str, caller: Caller | None) -> TurnView | None:
    """The turn a durable function's callback already began, as it is now (None: not begun). The same
    callback with another prompt, or in a session the caller may not use, starts nothing either."""
    tree = deps.store.load_tree(session_id, turn_id)
    if tree is None:
        return None
    if not may_act_for(deps.settings, tree.root.principal, caller):
        raise NotFoundError(f"there is no session {session_id!r} you may use; nothing was started")
    if tree.root.prompt != prompt:
        raise TurnBusyError(
            f"this callback already started turn {turn_id} of session {session_id!r} with another prompt: a callback "
            "waits for one turn; create a new callback for a new turn. Nothing was started"
        )
    return TurnView.of(tree)
