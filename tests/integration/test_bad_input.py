"""Bad input gets the documented error, a message saying nothing was done, and writes
nothing: the whole table and the whole bucket are identical before and after every rejected call.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from resumable.config import Settings
from resumable.exceptions import (
    ForbiddenError,
    NotFoundError,
    ServiceError,
    TurnBusyError,
    ValidationFailedError,
)
from resumable.service import Service, TurnView
from resumable.store import DynamoDBStore
from tests.factories import executions
from tests.integration.helpers import APPROVE, own_bucket, table_and_bucket

UNKNOWN_TURN = "0123456789abcdef0123456789abcdef"
UNKNOWN_CHILD = f"{UNKNOWN_TURN}~0123456789abcdef"
UNKNOWN_REQUEST = "r" + "0" * 24
MALFORMED_IDS = ["", "../x", "x" * 129, "x" * 10_000, "s#TURN", "a b", "séance", "-leading-dash", "\x00"]


@pytest.fixture
def aws(aws: Settings) -> Iterator[Settings]:
    """A bucket of this test's own (the table already is): a full listing stays small and fast."""
    with own_bucket(aws) as own:
        yield own


@functools.cache
def _raw(aws: Settings) -> DynamoDBStore:
    return DynamoDBStore(aws)


@contextmanager
def _writes_nothing(aws: Settings) -> Iterator[None]:
    before = table_and_bucket(_raw(aws))
    yield
    after = table_and_bucket(_raw(aws))
    assert after.items == before.items, "the table changed"
    assert after.objects == before.objects, "the bucket changed"


def _raises(error: type[ServiceError], code: str, call: Callable[[], object], says: str | None) -> ServiceError:
    with pytest.raises(error) as raised:
        call()
    assert raised.value.code == code
    if says is not None:
        assert says in str(raised.value), str(raised.value)
    return raised.value


def _rejected(
    aws: Settings, error: type[ServiceError], code: str, call: Callable[[], object], says: str | None = "nothing was"
) -> ServiceError:
    """``call`` raises ``error`` with ``code``, a message that says nothing was done, and writes nothing."""
    with _writes_nothing(aws):
        return _raises(error, code, call, says)


@dataclass
class Sessions:
    """Two sessions, each with a waiting turn; B also has an earlier turn, settled (canceled)."""

    a: str
    b: str
    a_turn: TurnView
    b_settled: TurnView
    b_turn: TurnView


@pytest.fixture
def sessions(make_service: Callable[..., Service], session_id: str) -> Sessions:
    service = make_service()
    a = service.start_turn(session_id, "delete prod-db")
    other = f"{session_id}-b"
    first = service.start_turn(other, "delete prod-db")
    settled = service.cancel(other, first.turn_id)
    assert settled.status == "canceled"
    b = service.start_turn(other, "delete prod-db again")
    assert (a.status, b.status) == ("waiting", "waiting")
    return Sessions(session_id, other, a, settled, b)


def test_the_before_and_after_comparison_sees_what_the_service_writes(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    items, objects = table_and_bucket(_raw(aws))
    assert any(f"SESSION#{sessions.a}" in item for item in items)
    assert any(key.startswith(f"snapshots/{sessions.b}/") for key, _, _ in objects)
    with pytest.raises(AssertionError, match="the table changed"), _writes_nothing(aws):
        make_service().cancel(sessions.a, sessions.a_turn.turn_id)


# -- unknown ids -----------------------------------------------------------------------------------------


def test_unknown_session_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    service, unknown = make_service(), f"{session_id}-nobody"
    _rejected(aws, NotFoundError, "not_found", lambda: service.get_turn(unknown, UNKNOWN_TURN), says=None)
    _rejected(aws, NotFoundError, "not_found", lambda: service.cancel(unknown, UNKNOWN_TURN))
    _rejected(
        aws,
        NotFoundError,
        "not_found",
        lambda: service.submit_approval(unknown, UNKNOWN_TURN, UNKNOWN_REQUEST, APPROVE),
    )
    _rejected(aws, NotFoundError, "not_found", lambda: service.recover(unknown, UNKNOWN_TURN), says=None)
    _rejected(aws, NotFoundError, "not_found", lambda: service.list_interactions(unknown))
    _rejected(aws, NotFoundError, "not_found", lambda: service.delete_session(unknown))
    _rejected(aws, NotFoundError, "not_found", lambda: service.restore_session(unknown))
    _rejected(aws, NotFoundError, "not_found", lambda: service.inspect(unknown, UNKNOWN_TURN), says=None)
    _rejected(aws, NotFoundError, "not_found", lambda: service.recover_turn(unknown, UNKNOWN_TURN), says=None)
    _rejected(aws, NotFoundError, "not_found", lambda: service.republish(unknown))


def test_deleting_an_unknown_session_looks_the_same_as_deleting_another_principals(
    make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    service = make_service()
    service.start_turn(session_id, "delete prod-db", principal="alice")
    unknown = f"{session_id}-x"
    for act in (service.delete_session, service.restore_session):
        missing = _rejected(aws, NotFoundError, "not_found", partial(act, unknown, "mallory"))
        theirs = _rejected(aws, NotFoundError, "not_found", partial(act, session_id, "mallory"))
        assert str(missing).replace(unknown, session_id) == str(theirs)


def test_a_session_the_application_started_is_deleted_only_by_an_approver(
    make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    service = make_service(approver_principals=("approver",))
    service.start_turn(session_id, "delete prod-db")  # no principal: a workflow's
    _rejected(aws, NotFoundError, "not_found", lambda: service.delete_session(session_id, "mallory"))
    assert service.delete_session(session_id, "approver").deleted


def test_the_operators_routes_are_refused_to_anyone_but_an_approver_and_write_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    service = make_service()
    turn = sessions.a_turn.turn_id
    for call in (
        partial(service.stalled, "mallory"),
        partial(service.inspect, sessions.a, turn, "mallory"),
        partial(service.recover_turn, sessions.a, turn, "mallory"),
        partial(service.republish, sessions.a, "mallory"),
    ):
        _rejected(aws, ForbiddenError, "forbidden", call)


@pytest.mark.parametrize("turn_id", [UNKNOWN_TURN, UNKNOWN_CHILD], ids=["root", "child"])
def test_unknown_turn_in_a_known_session_is_404_and_writes_nothing(
    turn_id: str, make_service: Callable[..., Service], aws: Settings, sessions: Sessions, ledger: Path
) -> None:
    service = make_service()
    request = sessions.a_turn.interactions[0].request_id
    _rejected(aws, NotFoundError, "not_found", lambda: service.get_turn(sessions.a, turn_id), says=None)
    _rejected(aws, NotFoundError, "not_found", lambda: service.cancel(sessions.a, turn_id))
    _rejected(aws, NotFoundError, "not_found", lambda: service.submit_approval(sessions.a, turn_id, request, APPROVE))
    _rejected(aws, NotFoundError, "not_found", lambda: service.recover(sessions.a, turn_id), says=None)
    assert executions(ledger) == []


def test_an_unknown_child_of_a_known_root_is_404_to_read(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    service = make_service()
    child = f"{sessions.a_turn.turn_id}~0123456789abcdef"
    _rejected(aws, NotFoundError, "not_found", lambda: service.get_turn(sessions.a, child), says=None)
    _rejected(aws, NotFoundError, "not_found", lambda: service.recover(sessions.a, child), says=None)


def test_canceling_an_unknown_child_of_a_known_root_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions, ledger: Path
) -> None:
    service = make_service()
    turn = sessions.a_turn
    child = f"{turn.turn_id}~0123456789abcdef"
    _rejected(aws, NotFoundError, "not_found", lambda: service.cancel(sessions.a, child))
    done = service.submit_approval(sessions.a, turn.turn_id, turn.interactions[0].request_id, APPROVE)
    assert done.status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_an_answer_under_an_unknown_child_of_a_known_root_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions, ledger: Path
) -> None:
    service = make_service()
    turn = sessions.a_turn
    child = f"{turn.turn_id}~0123456789abcdef"
    request = turn.interactions[0].request_id
    _rejected(aws, NotFoundError, "not_found", lambda: service.submit_approval(sessions.a, child, request, APPROVE))
    assert executions(ledger) == []
    assert service.get_turn(sessions.a, turn.turn_id).interactions[0].status == "requested"


def test_unknown_request_in_a_waiting_turn_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    service = make_service()
    turn = sessions.a_turn.turn_id
    _rejected(
        aws, NotFoundError, "not_found", lambda: service.submit_approval(sessions.a, turn, UNKNOWN_REQUEST, APPROVE)
    )
    assert service.get_turn(sessions.a, turn).interactions[0].status == "requested"


# -- another session's (or turn's) ids -------------------------------------------------------------------


def test_another_sessions_turn_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions, ledger: Path
) -> None:
    service = make_service()
    a_turn = sessions.a_turn.turn_id
    a_child = sessions.a_turn.children[0].turn_id
    a_request = sessions.a_turn.interactions[0].request_id
    for turn_id in (a_turn, a_child):
        _rejected(aws, NotFoundError, "not_found", partial(service.get_turn, sessions.b, turn_id), says=None)
        _rejected(aws, NotFoundError, "not_found", partial(service.cancel, sessions.b, turn_id))
        _rejected(aws, NotFoundError, "not_found", partial(service.recover, sessions.b, turn_id), says=None)
        _rejected(
            aws,
            NotFoundError,
            "not_found",
            partial(service.submit_approval, sessions.b, turn_id, a_request, APPROVE),
        )
    # A's own request under B's own turn: still another session's id.
    _rejected(
        aws,
        NotFoundError,
        "not_found",
        lambda: service.submit_approval(sessions.b, sessions.b_turn.turn_id, a_request, APPROVE),
    )
    assert service.get_turn(sessions.a, a_turn).status == "waiting"
    assert service.get_turn(sessions.b, sessions.b_turn.turn_id).status == "waiting"
    assert executions(ledger) == []


@pytest.mark.parametrize("status", [None, "requested", "answered", "expired"])
def test_listing_an_unknown_session_looks_the_same_as_listing_another_principals(
    status: Any, make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    service = make_service()
    service.start_turn(session_id, "delete prod-db", principal="alice")
    unknown = f"{session_id}-x"
    missing = _rejected(aws, NotFoundError, "not_found", lambda: service.list_interactions(unknown, status, "mallory"))
    theirs = _rejected(
        aws, NotFoundError, "not_found", lambda: service.list_interactions(session_id, status, "mallory")
    )
    assert str(missing).replace(unknown, session_id) == str(theirs)
    _rejected(aws, NotFoundError, "not_found", lambda: service.list_interactions(unknown, status, "alice"))
    assert len(service.list_interactions(session_id, status, "alice")) == (1 if status in (None, "requested") else 0)


def test_a_request_of_another_turn_of_the_same_session_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    service = make_service()
    b_request = sessions.b_turn.interactions[0].request_id
    settled_request = sessions.b_settled.interactions[0].request_id
    _rejected(
        aws,
        NotFoundError,
        "not_found",
        lambda: service.submit_approval(sessions.b, sessions.b_settled.turn_id, b_request, APPROVE),
    )
    _rejected(
        aws,
        NotFoundError,
        "not_found",
        lambda: service.submit_approval(sessions.b, sessions.b_turn.turn_id, settled_request, APPROVE),
    )


# -- malformed ids ---------------------------------------------------------------------------------------


def test_a_malformed_session_id_is_422_to_start_404_otherwise_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    service = make_service()
    turn, request = sessions.a_turn.turn_id, sessions.a_turn.interactions[0].request_id
    with _writes_nothing(aws):
        for bad in MALFORMED_IDS:
            _raises(
                ValidationFailedError,
                "validation_failed",
                partial(service.start_turn, bad, "delete prod-db"),
                "nothing was",
            )
            _raises(NotFoundError, "not_found", partial(service.get_turn, bad, turn), None)
            _raises(NotFoundError, "not_found", partial(service.cancel, bad, turn), "nothing was")
            _raises(
                NotFoundError,
                "not_found",
                partial(service.submit_approval, bad, turn, request, APPROVE),
                "nothing was",
            )
            _raises(NotFoundError, "not_found", partial(service.recover, bad, turn), None)
            _raises(NotFoundError, "not_found", partial(service.list_interactions, bad), None)
            _raises(NotFoundError, "not_found", partial(service.delete_session, bad), "nothing was")
            _raises(NotFoundError, "not_found", partial(service.restore_session, bad), "nothing was")
            _raises(NotFoundError, "not_found", partial(service.inspect, bad, turn), None)
            _raises(NotFoundError, "not_found", partial(service.republish, bad), "nothing was")


def test_a_malformed_turn_or_request_id_is_404_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    service = make_service()
    a, turn, request = sessions.a, sessions.a_turn.turn_id, sessions.a_turn.interactions[0].request_id
    with _writes_nothing(aws):
        for bad in [*MALFORMED_IDS, turn.upper(), f"{turn}~", f"{turn}~{turn}", f"{turn}/../{turn}", request.upper()]:
            _raises(NotFoundError, "not_found", partial(service.get_turn, a, bad), None)
            _raises(NotFoundError, "not_found", partial(service.cancel, a, bad), "nothing was")
            _raises(NotFoundError, "not_found", partial(service.recover, a, bad), None)
            _raises(NotFoundError, "not_found", partial(service.inspect, a, bad), None)
            _raises(NotFoundError, "not_found", partial(service.recover_turn, a, bad), None)
            _raises(
                NotFoundError,
                "not_found",
                partial(service.submit_approval, a, bad, request, APPROVE),
                "nothing was",
            )
            _raises(
                NotFoundError,
                "not_found",
                partial(service.submit_approval, a, turn, bad, APPROVE),
                "nothing was",
            )
    assert service.get_turn(a, turn).status == "waiting"


# -- prompts -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prompt", [None, 42, ["delete"], {"text": "delete"}, b"delete"], ids=repr)
def test_a_prompt_that_is_not_a_string_is_422_and_writes_nothing(
    prompt: Any, make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    _rejected(aws, ValidationFailedError, "validation_failed", lambda: make_service().start_turn(session_id, prompt))


@pytest.mark.parametrize("prompt", ["", " ", "\n\t  \n"], ids=repr)
def test_a_blank_prompt_is_422_and_writes_nothing(
    prompt: str, make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    _rejected(aws, ValidationFailedError, "validation_failed", lambda: make_service().start_turn(session_id, prompt))


def test_an_oversized_prompt_is_422_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    service = make_service()
    too_long = "x" * (aws.max_prompt_chars + 1)
    error = _rejected(aws, ValidationFailedError, "validation_failed", lambda: service.start_turn(session_id, too_long))
    assert str(aws.max_prompt_chars) in str(error)
    # The limit itself is accepted; then, in the session that now exists, the size is still refused first.
    assert service.start_turn(session_id, "x" * aws.max_prompt_chars).status == "waiting"
    _rejected(aws, ValidationFailedError, "validation_failed", lambda: service.start_turn(session_id, too_long))


def test_a_new_prompt_while_the_session_has_a_waiting_turn_is_409_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    _rejected(aws, TurnBusyError, "turn_busy", lambda: make_service().start_turn(sessions.a, "delete more"))


# -- responses ---------------------------------------------------------------------------------------------


def _answer(service: Service, sessions: Sessions, response: Any) -> Callable[[], object]:
    turn = sessions.a_turn
    return lambda: service.submit_approval(sessions.a, turn.turn_id, turn.interactions[0].request_id, response)


def test_a_null_response_is_422_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions
) -> None:
    _rejected(aws, ValidationFailedError, "validation_failed", _answer(make_service(), sessions, None))


def test_a_null_response_to_a_question_is_422_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, session_id: str
) -> None:
    """A question that is not an approval takes any JSON answer, but not null (nor an oversized one)."""
    service = make_service("asks_a_question")
    started = service.start_turn(session_id, "pick a region")
    [question] = started.interactions
    assert question.name == "region"

    def answer(response: Any) -> Callable[[], TurnView]:
        return lambda: service.submit_approval(session_id, started.turn_id, question.request_id, response)

    _rejected(aws, ValidationFailedError, "validation_failed", answer(None))
    _rejected(aws, ValidationFailedError, "validation_failed", answer("x" * aws.max_response_bytes))
    done = answer("eu-west-1")()
    assert (done.status, done.interactions[0].response) == ("completed", "eu-west-1")


def test_an_oversized_response_is_422_and_writes_nothing(
    make_service: Callable[..., Service], aws: Settings, sessions: Sessions, ledger: Path
) -> None:
    service = make_service()
    envelope = len(json.dumps({"decision": "deny", "message": ""}, separators=(",", ":")))
    at_limit = {"decision": "deny", "message": "x" * (aws.max_response_bytes - envelope)}
    one_over = {"decision": "deny", "message": "x" * (aws.max_response_bytes - envelope + 1)}
    huge = {"decision": "deny", "message": "x" * 1_000_000}
    for response in (one_over, huge):
        error = _rejected(aws, ValidationFailedError, "validation_failed", _answer(service, sessions, response))
        assert str(aws.max_response_bytes) in str(error)
    # The interaction is still open, and an answer of exactly the limit is taken.
    view = service.submit_approval(
        sessions.a, sessions.a_turn.turn_id, sessions.a_turn.interactions[0].request_id, at_limit
    )
    assert view.status == "completed"
    assert view.interactions[0].response == at_limit
    assert executions(ledger) == []


@pytest.mark.parametrize(
    "response",
    [
        {"decision": "yes"},
        {"decision": "Approve"},
        {"decision": "approve", "extra": 1},
        {"decision": "deny", "message": 7},
        {},
        "approve",
        True,
        1,
        ["approve"],
    ],
    ids=repr,
)
def test_an_answer_that_is_not_approval_shaped_is_422_for_an_approval_and_writes_nothing(
    response: Any, make_service: Callable[..., Service], aws: Settings, sessions: Sessions, ledger: Path
) -> None:
    service = make_service()
    error = _rejected(aws, ValidationFailedError, "validation_failed", _answer(service, sessions, response))
    assert "approve" in str(error)
    assert service.get_turn(sessions.a, sessions.a_turn.turn_id).interactions[0].status == "requested"
    assert executions(ledger) == []
