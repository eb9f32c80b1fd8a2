"""Exactly once against the embedded AWS: duplicate deliveries, conflicting answers, concurrent resumers
(threads and real OS processes) and replays after completion (DESIGN.md guarantees 1, 2 and 3).

Every thread gets its own ``Service`` (its own store and AWS clients): a rebuilt "process". Threads start
together on a barrier. Approved actions append a line to the ledger, so ``executions`` counts them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent
from resumable.config import Settings
from resumable.exceptions import ConflictError
from resumable.service import AgentContext, Service
from resumable.service.agent_factory import AgentFactory, load_factory
from resumable.service.views import TurnView
from resumable.store import DynamoDBStore
from tests.clock import FakeClock
from tests.factories import LEDGER_ENV, executions
from tests.integration.helpers import APPROVE, answered_but_not_resumed, at_once, session_items, table_and_bucket
from tests.patience import HANG_SECONDS

REPO = Path(__file__).resolve().parents[2]


def errors_of(outcomes: Sequence[object]) -> list[Exception]:
    return [outcome for outcome in outcomes if isinstance(outcome, Exception)]


def views_of(outcomes: Sequence[object]) -> list[TurnView]:
    return [outcome for outcome in outcomes if isinstance(outcome, TurnView)]


def counting(spec: str) -> tuple[AgentFactory, list[str]]:
    """The factory ``spec``, recording every build: the service builds agents only once it holds the lease,
    so each entry is one invocation that advanced the turn."""
    inner = load_factory(spec)
    builds: list[str] = []

    def factory(context: AgentContext) -> Agent:
        builds.append(context.turn_id)
        return inner(context)

    return factory, builds


# -- guarantee 1 and 2: duplicate deliveries and conflicting answers ---------------------------------------------


def test_fifty_identical_approvals_at_once_settle_once_and_run_the_action_once(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    [interaction] = started.interactions
    services = [make_service() for _ in range(50)]

    outcomes = at_once(
        [
            partial(
                service.submit_approval,
                session_id,
                started.turn_id,
                interaction.request_id,
                dict(APPROVE),
                principal=f"caller-{n}",
            )
            for n, service in enumerate(services)
        ]
    )

    assert errors_of(outcomes) == []
    replies = views_of(outcomes)
    assert len(replies) == 50
    final = make_service().get_turn(session_id, started.turn_id)
    assert (final.status, final.output) == ("completed", "The record is gone.")
    [stored] = final.interactions
    assert (stored.status, stored.response) == ("answered", APPROVE)
    # One settlement: every reply shows the same answer, recorded for the same one of the fifty callers.
    for reply in replies:
        assert reply.status in ("running", "completed")
        [seen] = reply.interactions
        assert (seen.status, seen.response, seen.answered_by) == ("answered", APPROVE, stored.answered_by)
    assert any(reply.status == "completed" for reply in replies)
    assert executions(ledger) == ["delete prod-db"]


def test_ten_conflicting_answers_at_once_one_wins_and_the_rest_get_409_naming_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    [interaction] = started.interactions
    answers: list[dict[str, str]] = [
        {"decision": "approve", "message": f"go ahead, says caller {n}"}
        if n % 2 == 0
        else {"decision": "deny", "message": f"stop, says caller {n}"}
        for n in range(10)
    ]
    services = [make_service() for _ in answers]

    outcomes = at_once(
        [
            partial(service.submit_approval, session_id, started.turn_id, interaction.request_id, answer)
            for service, answer in zip(services, answers, strict=True)
        ]
    )

    [winner] = views_of(outcomes)
    conflicts = errors_of(outcomes)
    assert len(conflicts) == 9
    assert all(isinstance(error, ConflictError) for error in conflicts), conflicts
    final = make_service().get_turn(session_id, started.turn_id)
    [stored] = final.interactions
    assert stored.status == "answered"
    winning = stored.response
    assert winning in answers
    assert winner.interactions[0].response == winning
    losing = [answer for answer in answers if answer != winning]
    for error in conflicts:
        assert isinstance(error, ConflictError)
        assert error.code == "conflict"
        assert error.winning == winning
        assert winning["decision"] in str(error)
        assert winning["message"] in str(error)
        assert not any(answer["message"] in str(error) for answer in losing)
    assert final.status == "completed"
    assert executions(ledger) == (["delete prod-db"] if winning["decision"] == "approve" else [])


# -- guarantee 2 and 3: concurrent resumers, rebuilt in threads and in OS processes ------------------------------


def test_rebuilt_services_resuming_the_same_turn_at_once_advance_it_once_and_run_the_action_once(
    make_service: Callable[..., Service], clock: FakeClock, ledger: Path
) -> None:
    # Two resumers that recover and two duplicate deliveries of the recorded answer, all at once; a few
    # rounds, so that the race is actually run.
    for round_number in range(3):
        session_id = f"s-{uuid.uuid4().hex[:12]}"
        started = answered_but_not_resumed(make_service(), session_id, clock)
        request_id = started.interactions[0].request_id
        factory, builds = counting("tests.factories:nested")
        resumers = [make_service(factory) for _ in range(4)]
        calls: list[Callable[[], TurnView]] = [
            partial(resumers[0].recover, session_id, started.turn_id),
            partial(resumers[1].recover, session_id, started.turn_id),
            partial(resumers[2].submit_approval, session_id, started.turn_id, request_id, dict(APPROVE)),
            partial(resumers[3].submit_approval, session_id, started.turn_id, request_id, dict(APPROVE)),
        ]

        outcomes = at_once(calls)

        assert errors_of(outcomes) == []
        assert builds == [started.turn_id], "exactly one resumer may lease the turn and rebuild its agents"
        final = make_service().get_turn(session_id, started.turn_id)
        assert (final.status, final.output) == ("completed", "The record is gone.")
        assert final.interactions[0].answered_by == "alice"
        assert executions(ledger) == ["delete prod-db"] * (round_number + 1)


RESUMER = """
import os, sys
from resumable.config import Settings
from resumable.service import Service

service = Service.from_settings(Settings.model_validate_json(os.environ["RESUMABLE_TEST_SETTINGS"]))
service.store.get_session("warm-up")  # connect before the races, so that neither process starts late
print("ready", flush=True)
for line in sys.stdin:
    how, session_id, turn_id, request_id = line.split()
    if how == "recover":
        view = service.recover(session_id, turn_id)
    else:
        view = service.submit_approval(
            session_id, turn_id, request_id, {"decision": "approve"}, principal=f"process-{os.getpid()}"
        )
    print(view.model_dump_json(), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ["recover", "submit_approval"])
def test_two_os_processes_resuming_the_same_turn_at_once_run_the_action_once(
    how: str, aws: Settings, make_service: Callable[..., Service], clock: FakeClock, tmp_path: Path, ledger: Path
) -> None:
    # The processes run on the real clock: put the fake one there too, so that the interactions' expiry and
    # the leases the processes take are all measured on one timeline.
    clock.current = time.time()
    settings = aws.model_copy(update={"agent_factory": "tests.factories:nested"})
    env = {**os.environ, LEDGER_ENV: str(ledger), "RESUMABLE_TEST_SETTINGS": settings.model_dump_json()}
    errors = [tmp_path / f"process-{n}.err" for n in range(2)]
    sinks = [error.open("w") for error in errors]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", RESUMER],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
        )
        for sink in sinks
    ]

    def reply_of(n: int) -> dict[str, Any]:
        stdout = processes[n].stdout
        assert stdout is not None
        line = stdout.readline()
        assert line, f"process {n} died: {errors[n].read_text()}"
        reply: dict[str, Any] = json.loads(line)
        return reply

    try:
        for n, process in enumerate(processes):
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready", errors[n].read_text()
        # A few rounds, each one turn that both processes resume at once (released by one write each).
        for round_number in range(4):
            session_id = f"s-{uuid.uuid4().hex[:12]}"
            service = make_service()
            if how == "recover":
                started = answered_but_not_resumed(service, session_id, clock)
            else:
                started = service.start_turn(session_id, "delete the prod-db record")
            order = f"{how} {session_id} {started.turn_id} {started.interactions[0].request_id}\n"
            for process in processes:
                assert process.stdin is not None
                process.stdin.write(order)
                process.stdin.flush()
            for reply in (reply_of(0), reply_of(1)):
                assert reply["turnId"] == started.turn_id
                assert reply["interactions"][0]["status"] == "answered"
                assert reply["interactions"][0]["response"] == APPROVE
            final = make_service().get_turn(session_id, started.turn_id)
            assert (final.status, final.output) == ("completed", "The record is gone.")
            assert executions(ledger) == ["delete prod-db"] * (round_number + 1)
        for process in processes:
            assert process.stdin is not None
            process.stdin.close()
        for n, process in enumerate(processes):
            assert process.wait(timeout=HANG_SECONDS) == 0, errors[n].read_text()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for sink in sinks:
            sink.close()


# -- guarantee 1 and 4: a replay after completion ---------------------------------------------------------------


def test_replaying_an_approval_after_the_turn_completed_returns_the_same_result_and_changes_nothing(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    request_id = started.interactions[0].request_id
    done = make_service().submit_approval(session_id, started.turn_id, request_id, dict(APPROVE), principal="alice")
    assert (done.status, done.output) == ("completed", "The record is gone.")
    assert executions(ledger) == ["delete prod-db"]
    before = table_and_bucket(store, session_id)
    clock.advance(3600)

    for principal in ("alice", "bob", "alice"):
        replay = make_service().submit_approval(session_id, started.turn_id, request_id, dict(APPROVE), principal)
        assert replay == done
        assert (replay.status, replay.output) == ("completed", "The record is gone.")
        [interaction] = replay.interactions
        assert (interaction.status, interaction.response, interaction.answered_by) == ("answered", APPROVE, "alice")

    assert executions(ledger) == ["delete prod-db"]
    assert table_and_bucket(store, session_id) == before


def test_a_different_answer_after_the_turn_completed_is_409_and_changes_nothing(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, clock: FakeClock, ledger: Path
) -> None:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    request_id = started.interactions[0].request_id
    make_service().submit_approval(session_id, started.turn_id, request_id, dict(APPROVE))
    before = table_and_bucket(store, session_id)
    clock.advance(60)

    with pytest.raises(ConflictError) as refused:
        make_service().submit_approval(session_id, started.turn_id, request_id, {"decision": "deny", "message": "no"})

    assert refused.value.winning == APPROVE
    assert executions(ledger) == ["delete prod-db"]
    assert table_and_bucket(store, session_id) == before


def test_an_approved_action_that_asks_before_it_does_anything_is_not_left_started_and_runs_once_answered(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str, ledger: Path
) -> None:
    """Its journal entry is taken back when it pauses (a takeover would otherwise find it started and
    in doubt); answered, the action begins again and runs once."""
    service = make_service("approved_then_asks")
    started = service.start_turn(session_id, "delete prod-db")
    [approval] = started.interactions
    asking = service.submit_approval(session_id, started.turn_id, approval.request_id, {"decision": "approve"})
    [question] = [i for i in asking.interactions if i.status == "requested"]
    assert (asking.status, question.name, executions(ledger)) == ("waiting", "region", [])
    assert [i for i in session_items(store, session_id) if "#ACTION#" in i["sk"]] == []
    done = service.submit_approval(session_id, started.turn_id, question.request_id, "eu-west-1")
    assert (done.status, executions(ledger)) == ("completed", ["delete prod-db in eu-west-1"])
