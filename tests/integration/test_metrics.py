"""What the service counts, as CloudWatch reads it: questions asked, answered (by decision) and closed
(by status), the time from a question to its answer, turns settled by status, and continuations
requested and failed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from resumable.exceptions import AwsError
from resumable.service import Service
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE
from tests.metrics import forget_metrics, printed_metrics


@pytest.fixture(autouse=True)
def _fresh(capsys: pytest.CaptureFixture[str], counting: None) -> None:
    forget_metrics(capsys)


def test_a_question_asked_then_approved_counts_its_wait_and_the_turn_completed(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    started = make_service().start_turn(session_id, "delete the prod-db record")
    assert printed_metrics(capsys) == {"InteractionsRequested": [1]}

    clock.advance(42.5)
    make_service().submit_approval(session_id, started.turn_id, started.interactions[0].request_id, APPROVE)

    assert printed_metrics(capsys) == {
        "InteractionsAnswered{Decision=approve}": [1],
        "TimeToAnswer": [42.5],
        "TurnsSettled{Status=completed}": [1],
    }


@pytest.mark.parametrize(
    ("response", "decision"),
    [
        ({"decision": "deny", "message": "not prod"}, "deny"),
        ({"decision": "approve", "input": {"name": "prod-db-replica"}}, "approve_edited"),
    ],
)
def test_answers_are_counted_by_decision(
    make_service: Callable[..., Service],
    session_id: str,
    capsys: pytest.CaptureFixture[str],
    response: dict[str, object],
    decision: str,
) -> None:
    service = make_service("nested_editable")
    started = service.start_turn(session_id, "delete the prod-db record")
    forget_metrics(capsys)
    service.submit_approval(session_id, started.turn_id, started.interactions[0].request_id, response)
    assert printed_metrics(capsys)[f"InteractionsAnswered{{Decision={decision}}}"] == [1]


def test_the_same_answer_again_counts_nothing(
    make_service: Callable[..., Service], session_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    service = make_service()
    started = service.start_turn(session_id, "delete the prod-db record")
    request = started.interactions[0].request_id
    service.submit_approval(session_id, started.turn_id, request, APPROVE)
    forget_metrics(capsys)
    service.submit_approval(session_id, started.turn_id, request, APPROVE)
    assert printed_metrics(capsys) == {}


def test_a_cancel_closes_its_questions_superseded_and_settles_the_turn_canceled(
    make_service: Callable[..., Service], session_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    service = make_service("fan_out")
    started = service.start_turn(session_id, "delete two records")
    forget_metrics(capsys)
    service.cancel(session_id, started.turn_id)
    assert printed_metrics(capsys) == {
        "InteractionsClosed{Status=superseded}": [2],
        "TurnsSettled{Status=canceled}": [1],
    }


def test_an_expired_question_closes_expired_and_settles_the_turn_expired(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    service = make_service()
    started = service.start_turn(session_id, "delete the prod-db record")
    clock.advance(service.settings.approval_expiry_seconds)
    forget_metrics(capsys)
    service.get_turn(session_id, started.turn_id)
    assert printed_metrics(capsys) == {
        "InteractionsClosed{Status=expired}": [1],
        "TurnsSettled{Status=expired}": [1],
    }


def test_continuations_requested_and_failed_are_counted(
    make_service: Callable[..., Service], session_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def refused(session_id: str, turn_id: str) -> None:
        raise AwsError("Lambda throttled the invocation")

    service = make_service("looks_then_deletes", turn_budget_seconds=0).continued_by(refused)
    assert service.start_turn(session_id, "delete the prod-db record").status == "running"
    assert printed_metrics(capsys) == {"ContinuationsRequested": [1], "ContinuationsFailed": [1]}


def test_outside_a_handler_nothing_is_counted(make_service: Callable[..., Service], session_id: str) -> None:
    """A program that uses the service itself (not through a handler) is not sent metrics it did not ask for."""
    from resumable.metrics import _dimensioned, metrics

    def outside() -> None:
        make_service().start_turn(session_id, "delete the prod-db record")

    import threading

    thread = threading.Thread(target=outside)  # a thread of its own: the test's counting does not reach it
    thread.start()
    thread.join()
    assert metrics.metric_set == {} and _dimensioned == {}


def test_a_refused_start_or_cancel_counts_no_start_or_cancel(
    make_service: Callable[..., Service], session_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from resumable.api.app import build_app
    from tests.integration.helpers import http

    api = build_app(make_service("nested"))
    assert http(api, "POST", "/sessions/bad%20id/turns", {"prompt": "delete"})[0] == 422
    assert http(api, "POST", f"/sessions/{session_id}/turns/{'0' * 32}/cancel")[0] == 404
    counted = printed_metrics(capsys)
    assert "TurnsStarted" not in counted and "Cancels" not in counted, counted
    assert http(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete"})[0] == 201
    assert printed_metrics(capsys).get("TurnsStarted") == [1]
