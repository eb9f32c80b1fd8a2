"""Races and limits an adversarial review found (each test failed before its fix): a cancel racing a
pause, an approved action after settlement, transaction conflicts, a commit split over transactions
that dies half way, oversized tool input, a retried snapshot put."""

from __future__ import annotations

import json
import threading
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, ToolContext, tool
from resumable.api import direct
from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.service import AgentContext, Service
from resumable.store import DynamoDBStore
from tests import factories
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.deployed import as_deployed
from tests.factories import _db_admin, _ThinkingModel, delete_record, executions
from tests.integration.helpers import root_record, session_items
from tests.patience import HANG_SECONDS, eventually

APPROVE = {"decision": "approve"}


def _service(aws: Settings, clock: FakeClock, factory: Any) -> Service:
    settings = aws.model_copy(update={"agent_factory": "tests.factories:nested"})
    return as_deployed(Service(DynamoDBStore(settings), settings, clock, factory))


# -- cancel settles a tree it read BEFORE request_cancel ---------------------------------------------


def thinking_nested(context: AgentContext) -> Agent:
    return Agent(
        name="orchestrator",
        model=_ThinkingModel(context, [calls(("o-1", "db_admin", {"prompt": "delete"})), says("done")]),
        tools=[_db_admin().as_tool()],
    )


def test_a_cancel_racing_a_pausing_commit_settles_the_whole_tree(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _service(aws, clock, thinking_nested)
    canceler = _service(aws, clock, thinking_nested)
    loaded, runner_committed = threading.Event(), threading.Event()
    real_load = canceler.store.load_tree

    def load_then_pause(*args: Any) -> Any:
        tree = real_load(*args)
        loaded.set()
        runner_committed.wait(HANG_SECONDS)  # the runner's commit lands between cancel's Query and its UpdateItem
        return tree

    monkeypatch.setattr(canceler.store, "load_tree", load_then_pause)
    views: list[Any] = []
    thread: list[threading.Thread] = []

    def start_cancel(context: AgentContext) -> None:
        monkeypatch.setattr(factories, "while_acting", None)
        t = threading.Thread(target=lambda: views.append(canceler.cancel(context.session_id, context.turn_id)))
        t.start()
        thread.append(t)
        loaded.wait(HANG_SECONDS)

    monkeypatch.setattr(factories, "while_acting", start_cancel)
    started = runner.start_turn(session_id, "delete prod-db")
    assert started.status == "waiting"
    runner_committed.set()
    thread[0].join(HANG_SECONDS)

    after = _service(aws, clock, thinking_nested).get_turn(session_id, started.turn_id)
    assert after.status == "canceled"
    assert [c.status for c in after.children] == ["canceled"]  # guarantee 7
    assert [i.status for i in after.interactions] == ["superseded"]


# -- an approved action starts after its turn was settled --------------------------------------------

after_action_a: list[Any] = []  # a test puts one callable here: called inside the run, after action a


def two_approvals(context: AgentContext) -> Agent:
    @tool(approval=True, name="delete_record")
    def slow_delete(name: str) -> str:
        """Delete a database record."""
        result = delete_record(name)
        if after_action_a:
            after_action_a.pop()(context)
        return str(result)

    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [calls(("o-1", "delete_record", {"name": "a"}), ("o-2", "delete_record", {"name": "b"})), says("done")]
        ),
        tools=[slow_delete],
        # One after another: these tests pin that an action not started when the turn is settled or
        # canceled never starts (concurrent calls: test_a_cancel_during_concurrent_actions_...).
        max_concurrent_tools=1,
    )


cancel_told = threading.Event()
b_began = threading.Event()


def three_concurrent_approvals(context: AgentContext) -> Agent:
    """Two approved deletes and an archive that asks its own question, on a pool of two: a and b run
    together, c waits for a thread (not an approved action: no journal entry stops it, only the
    stop signal)."""

    @tool(approval=True, name="delete_record")
    def slow_delete(name: str) -> str:
        """Delete a database record."""
        if name == "b":  # (its journal entry says it started: the cancel comes after)
            b_began.set()
            assert cancel_told.wait(HANG_SECONDS), "a never told the cancel"
        if name == "a":  # a and b run together, whichever thread gets going first
            assert b_began.wait(HANG_SECONDS), "b never began"
        result = delete_record(name)
        if name == "a" and after_action_a:
            after_action_a.pop()(context)
            cancel_told.set()
        return str(result)

    @tool(context=True)
    def archive(name: str, context: ToolContext) -> str:
        """Archive a database record."""
        context.interrupt("confirm_archive", {"name": name})
        return str(delete_record(name))

    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(
                    ("o-a", "delete_record", {"name": "a"}),
                    ("o-b", "delete_record", {"name": "b"}),
                    ("o-c", "archive", {"name": "c"}),
                ),
                says("done"),
            ]
        ),
        tools=[slow_delete, archive],
        max_concurrent_tools=2,
    )


def test_no_approved_action_starts_after_the_turn_settled(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    svc = _service(aws, clock, two_approvals)
    started = svc.start_turn(session_id, "delete a and b")
    first, second = started.interactions
    svc.submit_approval(session_id, started.turn_id, first.request_id, APPROVE)
    seen: list[Any] = []
    thawed = threading.Event()

    def frozen_heartbeat(**_: Any) -> None:
        """The runner's process is frozen while action a runs: its lease's heartbeat cannot renew it."""
        assert thawed.wait(HANG_SECONDS), "never thawed"

    def slow_then_cancel(context: AgentContext) -> None:
        svc.store.dynamodb.meta.events.register("before-call.dynamodb.UpdateItem", frozen_heartbeat)  # type: ignore[attr-defined]
        clock.advance(aws.lease_seconds + 1)  # action a was slow: the run's lease expired meanwhile
        seen.append(_service(aws, clock, two_approvals).cancel(context.session_id, context.turn_id))
        svc.store.dynamodb.meta.events.unregister("before-call.dynamodb.UpdateItem", frozen_heartbeat)  # type: ignore[attr-defined]
        thawed.set()

    after_action_a.append(slow_then_cancel)
    svc.submit_approval(session_id, started.turn_id, second.request_id, APPROVE)
    assert seen[0].status == "interrupted"
    assert executions(ledger) == ["delete a"], "delete b ran after the turn was settled interrupted"


def test_a_live_runner_told_to_cancel_during_a_slow_action_starts_no_other_and_confirms(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    svc = _service(aws, clock, two_approvals)
    started = svc.start_turn(session_id, "delete a and b")
    first, second = started.interactions
    svc.submit_approval(session_id, started.turn_id, first.request_id, APPROVE)
    seen: list[Any] = []

    def slow_then_cancel(context: AgentContext) -> None:
        clock.advance(aws.lease_seconds + 1)  # action a was slow; the heartbeat kept the lease
        eventually(
            lambda: (
                True
                if (root_record(svc.store, session_id, started.turn_id).lease_expires_at or 0) > clock.now()
                else None
            ),
            "the heartbeat's renewal",
        )
        seen.append(_service(aws, clock, two_approvals).cancel(context.session_id, context.turn_id))

    after_action_a.append(slow_then_cancel)
    done = svc.submit_approval(session_id, started.turn_id, second.request_id, APPROVE)
    assert seen[0].status == "running", "the cancel was told to the live runner"
    assert done.status == "canceled", "the runner confirmed the cancel at its next step"
    assert executions(ledger) == ["delete a"], "delete b ran after a cancel was requested"


def test_a_cancel_during_concurrent_actions_is_seen_by_the_call_still_waiting_for_a_thread(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    cancel_told.clear()
    b_began.clear()
    svc = _service(aws, clock, three_concurrent_approvals)
    started = svc.start_turn(session_id, "delete a and b, archive c")
    assert len(started.interactions) == 3, "one pause collects every concurrent call's question"
    approvals = [i for i in started.interactions if i.name == "approval"]
    [confirm] = [i for i in started.interactions if i.name == "confirm_archive"]
    for interaction in approvals:
        svc.submit_approval(session_id, started.turn_id, interaction.request_id, APPROVE)
    seen: list[Any] = []

    def cancel(context: AgentContext) -> None:
        seen.append(_service(aws, clock, three_concurrent_approvals).cancel(context.session_id, context.turn_id))

    after_action_a.append(cancel)
    done = svc.submit_approval(session_id, started.turn_id, confirm.request_id, {"ok": True})
    assert seen[0].status == "running", "the cancel was told to the live runner"
    assert done.status == "canceled"
    assert sorted(executions(ledger)) == ["delete a", "delete b"], "c started after the cancel was requested"


# -- TransactionConflict (real DynamoDB under contention) is treated as a stale commit ------------------


def _conflict_on(service: Service, nth: int, items: int = 3) -> None:
    """Make the nth TransactWriteItems of this service answer as real DynamoDB does under contention."""
    count = {"n": 0}

    def before(**_: Any) -> Any:
        count["n"] += 1
        if count["n"] != nth:
            return None
        http = types.SimpleNamespace(status_code=400, headers={})
        return http, {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * (items - 1),
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    service.store.dynamodb.meta.events.register("before-call.dynamodb.TransactWriteItems", before)  # type: ignore[attr-defined]


def test_a_transaction_conflict_on_the_final_commit_is_retried_and_the_turn_completes(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    svc = _service(aws, clock, factories.nested)
    started = svc.start_turn(session_id, "delete prod-db")
    _conflict_on(svc, 2)  # 1: answer_interaction, 2: the runner's commit
    done = svc.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)
    assert _service(aws, clock, factories.nested).recover(session_id, started.turn_id).status == "completed"
    assert done.status == "completed"


def test_a_duplicate_answer_under_a_transaction_conflict_is_still_idempotent(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    """The same approval sent twice at once: the duplicate read the question still waiting, then the
    first answer's run completed the turn, then the duplicate's own write met a transaction conflict (as
    DynamoDB answers two transactions on one item). Retried, its condition refuses it: it is told the
    turn as the first left it, and the action ran once."""
    first = _service(aws, clock, factories.nested)
    duplicate = _service(aws, clock, factories.nested)
    started = first.start_turn(session_id, "delete prod-db")
    req = started.interactions[0].request_id
    replies = []
    real_read = duplicate.store.get_interaction

    def read_then_the_first_answers(*args: Any) -> Any:
        asked = real_read(*args)
        if not replies:  # (between the duplicate's read of the question and its write)
            replies.append(first.submit_approval(session_id, started.turn_id, req, APPROVE))
        return asked

    duplicate.store.get_interaction = read_then_the_first_answers  # type: ignore[method-assign]
    writes: list[str] = []
    duplicate.store.dynamodb.meta.events.register(  # type: ignore[attr-defined]
        "before-call.dynamodb.TransactWriteItems", lambda **_: writes.append("TransactWriteItems")
    )
    _conflict_on(duplicate, 1, items=2)  # (before this answer's fix: TurnBusyError, 409)
    again = duplicate.submit_approval(session_id, started.turn_id, req, APPROVE)
    assert writes and replies, "the duplicate never wrote after the first answer: the race did not happen"
    assert (replies[0].status, again.status) == ("completed", "completed")
    assert again.output == replies[0].output == "The record is gone."
    assert executions(ledger) == ["delete prod-db"], "the approved action ran again for the duplicate"


# -- a commit split across transactions, then a crash between them -----------------------------------


FAN_OUT = 50  # 50 interactions + 50 child turns + the root, the session and the event: two transactions


def fan_out_fresh_ids(context: AgentContext) -> Agent:
    """Like a real model: fresh toolUseIds on every run (Bedrock's are random)."""
    uses = [(f"t-{uuid.uuid4().hex[:8]}", "db_admin", {"prompt": f"delete {n}"}) for n in range(FAN_OUT)]
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(*uses), says("all gone")]),
        tools=[_db_admin().as_tool()],
        max_steps=5,
    )


@pytest.mark.slow
def test_a_commit_split_over_transactions_that_dies_half_way_is_taken_over_and_completes(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    dying = _service(aws, clock, fan_out_fresh_ids)
    transactions = {"n": 0}

    def die_before_the_final_transaction(**_: Any) -> None:
        transactions["n"] += 1
        if transactions["n"] == 3:  # 1: begin_turn, 2: the commit's first chunk, 3: its final transaction
            raise RuntimeError("Lambda timed out")

    dying.store.dynamodb.meta.events.register(  # type: ignore[attr-defined]
        "before-call.dynamodb.TransactWriteItems", die_before_the_final_transaction
    )
    with pytest.raises(AwsError):
        dying.start_turn(session_id, "delete fifty")
    clock.advance(aws.lease_seconds + 1)
    service = _service(aws, clock, fan_out_fresh_ids)
    turn_id = _root_id(aws, session_id)
    retaken = service.recover(session_id, turn_id)

    # The first attempt's questions (written by the chunk that landed) are superseded: only the re-run's
    # are open, and the count of open interactions matches them.
    requested = [i for i in retaken.interactions if i.status == "requested"]
    assert len(requested) == FAN_OUT
    tree = DynamoDBStore(aws).load_tree(session_id, turn_id)
    assert tree is not None
    assert tree.root.open_interactions == FAN_OUT
    assert sum(1 for i in retaken.interactions if i.status == "superseded") > 0
    for interaction in requested:
        done = service.submit_approval(session_id, turn_id, interaction.request_id, APPROVE)
    assert done.status == "completed"
    assert len(executions(ledger)) == FAN_OUT


def test_a_read_settles_a_tree_wider_than_one_transaction_whose_questions_all_expired(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    """The settlement touches every turn, question and event of the tree (over 150 items): it is split
    over transactions, each earlier one guarded by a check on the root, and lands whole."""
    requested: list[tuple[str, str]] = []
    service = _service(aws, clock, fan_out_fresh_ids).continued_by(lambda s, t: requested.append((s, t)))
    started = service.start_turn(session_id, "delete fifty")
    assert len(started.interactions) == FAN_OUT
    clock.advance(aws.approval_expiry_seconds + 1)
    transactions: list[int] = []
    service.store.dynamodb.meta.events.register(  # type: ignore[attr-defined]
        "before-call.dynamodb.TransactWriteItems", lambda params, **_: transactions.append(len(params["body"]))
    )

    read = service.get_turn(session_id, started.turn_id)

    assert read.status == "expired" and len(transactions) >= 2
    assert [i.status for i in read.interactions] == ["expired"] * FAN_OUT
    assert {c.status for c in read.children} == {"expired"}
    assert executions(ledger) == []


def fifty_large_questions(context: AgentContext) -> Agent:
    """Fifty approvals asked at once, each of a 12 KB input: with their events, over 1 MB of items."""
    uses = [(f"t-{n}", "delete_record", {"name": f"{n:02d}-" + "x" * 12_000}) for n in range(FAN_OUT)]
    return Agent(name="orchestrator", model=ScriptedModel([calls(*uses), says("all gone")]), tools=[delete_record])


def test_a_session_over_dynamodbs_1_mb_query_page_is_read_whole(
    aws: Settings, clock: FakeClock, session_id: str
) -> None:
    """A Query returns at most 1 MB a page (moto too): a turn's tree is read page after page."""
    service = _service(aws, clock, fifty_large_questions)
    started = service.start_turn(session_id, "delete fifty")
    assert sum(len(json.dumps(i, default=str)) for i in session_items(DynamoDBStore(aws), session_id)) > 1024 * 1024
    pages: list[bool] = []
    reader = _service(aws, clock, fifty_large_questions)
    reader.store.dynamodb.meta.events.register(  # type: ignore[attr-defined]
        "after-call.dynamodb.Query", lambda parsed, **_: pages.append("LastEvaluatedKey" in parsed)
    )

    read = reader.get_turn(session_id, started.turn_id)

    assert True in pages, "a page ended before the partition did"
    assert sorted(i.reason["input"]["name"][:2] for i in read.interactions) == [f"{n:02d}" for n in range(FAN_OUT)]


def test_a_turn_larger_than_a_workflows_state_reaches_the_state_machine_cut_and_still_decides_its_path(
    aws: Settings, clock: FakeClock, session_id: str
) -> None:
    """Step Functions holds 256 KB of state: StartTurn's direct reply carries the turn whole where it
    fits, else its status, ids and cut text (``truncated``), which is all the state machine reads."""
    service = _service(aws, clock, fifty_large_questions)
    event = {"sessionId": session_id, "prompt": "delete fifty", "principal": "workflow", "workflow": True}

    reply = direct.start_turn(service, event)

    assert len(json.dumps(reply).encode()) < 256 * 1024
    assert (reply["turn"]["status"], reply["turn"]["truncated"], reply["turn"]["interactions"]) == ("waiting", True, [])
    assert reply["waitSeconds"] == aws.approval_expiry_seconds + 1
    assert len(service.get_turn(session_id, reply["turn"]["turnId"]).interactions) == FAN_OUT


def fan_out_fixed_ids(context: AgentContext) -> Agent:
    """The same toolUseIds on every run: the re-run meets the first attempt's interactions again."""
    uses = [(f"t-{n}", "db_admin", {"prompt": f"delete {n}"}) for n in range(FAN_OUT)]
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(*uses), says("all gone")]),
        tools=[_db_admin().as_tool()],
    )


def test_a_split_commit_that_dies_before_its_last_transaction_still_announces_every_question_once(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    """The questions landed with the first transaction, their events were to land with the last: the
    re-run that meets them again announces them."""
    dying = _service(aws, clock, fan_out_fixed_ids)
    transactions = {"n": 0}

    def die_before_the_final_transaction(**_: Any) -> None:
        transactions["n"] += 1
        if transactions["n"] == 3:
            raise RuntimeError("Lambda timed out")

    dying.store.dynamodb.meta.events.register(  # type: ignore[attr-defined]
        "before-call.dynamodb.TransactWriteItems", die_before_the_final_transaction
    )
    with pytest.raises(AwsError):
        dying.start_turn(session_id, "delete fifty")
    assert [i for i in session_items(DynamoDBStore(aws), session_id) if i.get("entity") == "event"] == []
    clock.advance(aws.lease_seconds + 1)
    retaken = _service(aws, clock, fan_out_fixed_ids).recover(session_id, _root_id(aws, session_id))
    requested = sorted(i.request_id for i in retaken.interactions if i.status == "requested")
    assert len(requested) == FAN_OUT
    events = [i for i in session_items(DynamoDBStore(aws), session_id) if i.get("entity") == "event"]
    announced = sorted(json.loads(e["detail"])["requestId"] for e in events if e["type"] == "Interaction Requested")
    assert announced == requested, "every open question is announced, once"


def _root_id(aws: Settings, session_id: str) -> str:
    session = DynamoDBStore(aws).get_session(session_id)
    assert session is not None and session.active_turn_id is not None
    return session.active_turn_id
