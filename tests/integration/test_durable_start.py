"""A turn a Lambda durable function waits for is started once per callback: its submitter may run again
(a replay of the step that runs it, a retry, a process that died after any of its AWS calls, two of it at
once), and every run names the same turn, started once; the approved action runs once."""

from __future__ import annotations

import base64
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from resumable.api.direct import start_turn as direct_start
from resumable.exceptions import NotFoundError, TurnBusyError, ValidationFailedError
from resumable.service import Service
from resumable.service.ids import callback_turn_id
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE, at_once, meet_after_first, session_items, store_of
from tests.integration.test_fault_injection import Faults
from tests.patience import HANG_SECONDS

PROMPT = "delete the prod-db record"
WORKFLOW = "arn:aws:lambda:us-east-1:111122223333:function:claims-pipeline"


def a_callback_id() -> str:
    """A callback id in Lambda's form (base64)."""
    return base64.b64encode(uuid.uuid4().bytes * 2).decode()


def root_turns(service: Service, session_id: str) -> list[str]:
    """The root turns stored in the session."""
    items = session_items(store_of(service), session_id)
    return [i["turn_id"] for i in items if i.get("entity") == "turn" and i.get("parent_turn_id") is None]


def test_a_start_again_with_the_same_callback_returns_its_turn_as_it_is_now_and_starts_nothing(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    callback = a_callback_id()
    first = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
    assert first.status == "waiting" and first.turn_id == callback_turn_id(session_id, callback)
    again = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
    assert again.model_dump() == first.model_dump()

    [asked] = first.interactions
    done = make_service().submit_approval(session_id, first.turn_id, asked.request_id, APPROVE, WORKFLOW)
    assert done.status == "completed" and executions(ledger) == ["delete prod-db"]
    # Once the session has moved on to another turn, the callback's start still names its own, settled.
    other = make_service().start_turn(session_id, "another question", WORKFLOW)
    later = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
    assert later.turn_id == first.turn_id and later.status == "completed" and later.output == done.output
    assert sorted(root_turns(make_service(), session_id)) == sorted([first.turn_id, other.turn_id])
    assert executions(ledger) == ["delete prod-db"]


def test_the_callback_id_is_stored_on_its_turn_alone_and_never_shown(
    make_service: Callable[..., Service], session_id: str
) -> None:
    callback = a_callback_id()
    view = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
    plain = make_service().start_turn("s-" + uuid.uuid4().hex[:12], PROMPT, WORKFLOW)
    items = {i["turn_id"]: i for i in session_items(store_of(make_service()), session_id) if i.get("entity") == "turn"}
    assert items[view.turn_id]["callback_id"] == callback
    assert all("callback_id" not in i for t, i in items.items() if t != view.turn_id), "child turns hold none"
    [plain_root] = [
        i
        for i in session_items(store_of(make_service()), plain.session_id)
        if i.get("entity") == "turn" and i["turn_id"] == plain.turn_id
    ]
    assert not {"callback_id", "callback_told", "callback_heartbeat"} & plain_root.keys(), "nothing where none waits"
    approver = "arn:aws:iam::111122223333:user/operator"
    inspected = make_service(approver_principals=(approver,)).inspect(session_id, view.turn_id, approver)
    for shown in (view.model_dump_json(), plain.model_dump_json(), inspected.model_dump_json()):
        assert callback not in shown


def test_the_same_callback_with_another_prompt_or_from_someone_else_starts_nothing_and_says_so(
    make_service: Callable[..., Service], session_id: str
) -> None:
    callback = a_callback_id()
    first = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
    with pytest.raises(TurnBusyError, match=r"this callback already started turn .* with another prompt"):
        make_service().start_turn(session_id, "something else", WORKFLOW, callback_id=callback)
    with pytest.raises(NotFoundError, match="nothing was started"):
        make_service().start_turn(session_id, PROMPT, "arn:aws:iam::111122223333:user/mallory", callback_id=callback)
    assert root_turns(make_service(), session_id) == [first.turn_id]


@pytest.mark.parametrize("overlap", ["both_look_before_either_begins", "one_looks_after_the_other_began"])
def test_two_starts_of_one_callback_at_once_start_one_turn(
    make_service: Callable[..., Service], session_id: str, overlap: str
) -> None:
    """Both find no turn, then both begin it (one transaction is refused); or the second finds no turn,
    then finds the session busy with the turn the first began meanwhile."""
    callback = a_callback_id()
    services = [make_service(), make_service()]
    if overlap == "both_look_before_either_begins":
        meet_after_first(services, "GetItem")  # (both read the session as it was: both begin, one is refused)
    else:
        began = threading.Event()
        store_of(services[0]).dynamodb.meta.events.register(
            "after-call.dynamodb.TransactWriteItems", lambda **_: began.set()
        )
        store_of(services[1]).dynamodb.meta.events.register(
            "after-call.dynamodb.Query", lambda **_: began.wait(HANG_SECONDS)
        )
    outcomes = at_once([lambda s=s: s.start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback) for s in services])
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert {o.turn_id for o in outcomes if not isinstance(o, Exception)} == {callback_turn_id(session_id, callback)}
    assert root_turns(make_service(), session_id) == [callback_turn_id(session_id, callback)]


@pytest.mark.parametrize("phase", ["before", "after"])
def test_a_submitter_run_again_after_each_aws_call_of_its_start_starts_one_turn_whose_action_runs_once(
    make_service: Callable[..., Service], clock: FakeClock, ledger: Path, phase: str
) -> None:
    """The submitter's start dies at each of its AWS calls in turn (before the call reaches AWS, or after
    AWS applied it); the durable runtime runs the submitter again, in a new process; then the turn is
    answered. Each time: one turn in the session, the action run once."""
    counted = make_service()
    calls = Faults(counted)
    counted.start_turn("s-" + uuid.uuid4().hex[:12], PROMPT, WORKFLOW, callback_id=a_callback_id())
    assert len(calls.calls) >= 3, calls.calls
    for k in range(len(calls.calls)):
        session_id, callback = f"s-{uuid.uuid4().hex[:12]}", a_callback_id()
        dying = make_service()
        faults = Faults(dying, crash_at=k, phase=phase)
        ran_before = len(executions(ledger))
        with pytest.raises(Exception):  # noqa: B017 (the process dies: whatever surfaces)
            dying.start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
        assert faults.fired, f"k={k}: no fault fired"
        clock.advance(3600)  # (past any lease the dead start held)
        again = make_service().start_turn(session_id, PROMPT, WORKFLOW, callback_id=callback)
        assert again.turn_id == callback_turn_id(session_id, callback), faults.fired
        if again.status == "running":  # (the dead start began it and held its lease: it is taken over)
            again = make_service().recover(session_id, again.turn_id)
        assert again.status == "waiting", (faults.fired, again)
        [asked] = again.interactions
        done = make_service().submit_approval(session_id, again.turn_id, asked.request_id, APPROVE, WORKFLOW)
        assert done.status == "completed", (faults.fired, done)
        assert root_turns(make_service(), session_id) == [again.turn_id], faults.fired
        assert executions(ledger)[ran_before:] == ["delete prod-db"], faults.fired


def test_the_direct_start_takes_a_callback_id_in_lambdas_form_only(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service()
    callback = a_callback_id()
    event = {"sessionId": session_id, "prompt": PROMPT, "principal": WORKFLOW, "callbackId": callback}
    first, again = direct_start(service, event), direct_start(service, event)
    assert first["turn"]["turnId"] == again["turn"]["turnId"] == callback_turn_id(session_id, callback)
    for bad in ("", "not a callback!", "a" * 1025, "ab==c", "YQ==\n"):
        with pytest.raises(ValidationFailedError, match="callbackId"):
            direct_start(service, {**event, "callbackId": bad})
    with pytest.raises(ValidationFailedError, match="not both"):
        direct_start(service, {**event, "sessionId": "s-" + uuid.uuid4().hex[:12], "workflow": True})
