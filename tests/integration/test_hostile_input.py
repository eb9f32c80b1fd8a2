"""Hostile input at the HTTP edge, through the resolver every function runs, against the embedded AWS:
any body gets a 4xx ``{code, message}`` and writes nothing, whatever session it names; and the store
tells a lost race (a condition that failed) from any other refused transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resumable.api.app import build_app
from resumable.config import Settings
from resumable.exceptions import AwsError, StaleCommitError
from resumable.service import Service
from resumable.store import Commit, DynamoDBStore
from resumable.store.records import SessionRecord, TurnRecord
from tests.integration.helpers import ALICE, APPROVE, http, own_bucket, root_record, table_and_bucket

MALLORY = "arn:aws:iam::111122223333:user/mallory"
UNKNOWN_TURN = "0123456789abcdef0123456789abcdef"
UNKNOWN_REQUEST = "r" + "0" * 24
SURROGATE = '{"response": {"decision": "deny", "message": "\\ud800"}}'


@pytest.fixture
def aws(aws: Settings) -> Iterator[Settings]:
    """A bucket of this test's own (the table already is): a full listing stays small and fast."""
    with own_bucket(aws) as own:
        yield own


@pytest.fixture
def api(make_service: Callable[..., Service]) -> APIGatewayHttpResolver:
    return build_app(make_service("nested"))


@pytest.fixture
def store(make_service: Callable[..., Service]) -> DynamoDBStore:
    store = make_service().store
    assert isinstance(store, DynamoDBStore)
    return store


def _answer_path(session_id: str, turn_id: str = UNKNOWN_TURN, request_id: str = UNKNOWN_REQUEST) -> str:
    return f"/sessions/{session_id}/turns/{turn_id}/interactions/{request_id}"


def _refused(status: int, body: object) -> None:
    assert 400 <= status < 500, (status, body)
    assert isinstance(body, dict) and set(body) == {"code", "message"}, body
    assert "nothing was" in body["message"], body


# Bodies as an attacker writes them: any text, JSON nested to any depth, JSON with lone surrogates.
_LEVELS = st.integers(0, 3_000)
_BODIES = (
    st.text(st.characters(codec=None, exclude_categories=()), max_size=300)
    | _LEVELS.map(lambda n: '{"response": ' + "[" * n + "]" * n + "}")
    | _LEVELS.map(lambda n: '{"prompt": ' + '{"a":' * n + "1" + "}" * n + "}")
    | st.text(st.characters(codec=None, categories=["Cs", "Ll"]), min_size=1, max_size=5).map(
        lambda t: json.dumps({"response": {"decision": "deny", "message": t}})
    )
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_BODIES)
def test_no_body_crashes_the_edge_and_none_writes_to_a_session_that_is_not_there(
    api: APIGatewayHttpResolver, store: DynamoDBStore, session_id: str, body: str
) -> None:
    before = table_and_bucket(store)
    status, reply = http(api, "POST", _answer_path(session_id), raw=body)
    _refused(status, reply)
    assert table_and_bucket(store) == before


def test_a_body_nested_a_thousand_levels_deep_is_422_on_every_route_and_writes_nothing(
    api: APIGatewayHttpResolver, store: DynamoDBStore, session_id: str
) -> None:
    deep = "[" * 1_000 + "]" * 1_000
    before = table_and_bucket(store)
    for path, body in [
        (f"/sessions/{session_id}/turns", '{"prompt": ' + deep + "}"),
        (_answer_path(session_id), '{"response": ' + deep + "}"),
    ]:
        status, reply = http(api, "POST", path, raw=body)
        assert (status, reply["code"]) == (422, "validation_failed"), reply
        assert "1001 levels deep, the limit is 64" in reply["message"]
    # Cancel takes no body: whatever is sent is not read.
    status, reply = http(api, "POST", f"/sessions/{session_id}/turns/{UNKNOWN_TURN}/cancel", raw=deep)
    assert (status, reply["code"]) == (404, "not_found")
    assert table_and_bucket(store) == before


def test_text_utf8_cannot_hold_is_422_whether_the_session_is_unknown_yours_or_anothers(
    api: APIGatewayHttpResolver, store: DynamoDBStore, session_id: str
) -> None:
    _, turn = http(api, "POST", f"/sessions/{session_id}/turns", {"prompt": "delete the prod-db record"})
    mine = _answer_path(session_id, turn["turnId"], turn["interactions"][0]["requestId"])
    before = table_and_bucket(store)
    replies = [
        http(api, "POST", _answer_path(f"{session_id}-unknown"), raw=SURROGATE),
        http(api, "POST", mine, raw=SURROGATE),
        http(api, "POST", mine, raw=SURROGATE, principal=MALLORY),
        http(api, "POST", f"/sessions/{session_id}-new/turns", raw='{"prompt": "delete \\udc00"}'),
    ]
    assert replies[0] == replies[1] == replies[2], "the reply must not depend on whose session it is"
    for status, reply in replies:
        assert (status, reply["code"]) == (422, "validation_failed"), reply
        assert "UTF-8 cannot encode" in reply["message"]
    assert table_and_bucket(store) == before
    assert root_record(store, session_id, turn["turnId"]).status == "waiting"


def test_a_form_body_is_told_the_body_must_be_a_json_object_and_json_is_read_whatever_the_content_type(
    api: APIGatewayHttpResolver, session_id: str
) -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}  # what curl -d sends
    status, reply = http(api, "POST", f"/sessions/{session_id}/turns", raw="prompt=delete+prod-db", headers=form)
    assert (status, reply["code"]) == (400, "bad_request")
    assert "the body must be a JSON object" in reply["message"]
    assert "Extra inputs" not in reply["message"]
    status, turn = http(api, "POST", f"/sessions/{session_id}/turns", raw='{"prompt": "delete prod-db"}', headers=form)
    assert (status, turn["status"]) == (201, "waiting")


@pytest.mark.parametrize(
    ("raw", "status", "code", "says"),
    [
        ('{"prompt": 5}', 422, "validation_failed", "body field 'prompt': Input should be a valid string"),
        ("{}", 422, "validation_failed", "body field 'prompt' is required"),
        ('{"prompt": "x", "extra": 1}', 422, "validation_failed", "body field 'extra' is not one this route takes"),
        ("[]", 400, "bad_request", "must be a JSON object, not an array"),
        ("", 400, "bad_request", "the body is empty"),
        ("{not json", 400, "bad_request", "is not JSON"),
    ],
)
def test_400_is_for_a_body_that_is_not_a_json_object_and_422_for_one_of_the_wrong_shape(
    api: APIGatewayHttpResolver, session_id: str, raw: str, status: int, code: str, says: str
) -> None:
    got, reply = http(api, "POST", f"/sessions/{session_id}/turns", raw=raw)
    assert (got, reply["code"]) == (status, code)
    assert says in reply["message"], reply["message"]


# -- the store: a lost race is a condition that failed, anything else is an AWS failure ------------------------


def _turn(session_id: str, turn_id: str, **fields: object) -> TurnRecord:
    return TurnRecord.model_validate(
        {
            "session_id": session_id,
            "turn_id": turn_id,
            "root_turn_id": turn_id,
            "agent": "",
            "agent_path": [],
            "status": "running",
            "version": 1,
            "lease_owner": "runner",
            "created_at": 1.0,
            "updated_at": 1.0,
            **fields,
        }
    )


def test_beginning_a_turn_that_dynamodb_refuses_for_its_content_is_a_store_error_not_a_lost_race(
    store: DynamoDBStore, session_id: str
) -> None:
    session = SessionRecord(session_id=session_id, active_turn_id=UNKNOWN_TURN, created_at=1.0, updated_at=1.0)
    with pytest.raises(AwsError, match="UnicodeEncodeError"):
        store.begin_turn(None, session, _turn(session_id, UNKNOWN_TURN, prompt="delete \ud800"))
    assert store.begin_turn(None, session, _turn(session_id, UNKNOWN_TURN, prompt="delete"))
    assert not store.begin_turn(None, session, _turn(session_id, UNKNOWN_TURN, prompt="delete"))  # a lost race


def test_a_commit_that_dynamodb_refuses_for_its_content_is_a_store_error_not_a_stale_commit(
    store: DynamoDBStore, session_id: str
) -> None:
    session = SessionRecord(session_id=session_id, active_turn_id=UNKNOWN_TURN, created_at=1.0, updated_at=1.0)
    root = _turn(session_id, UNKNOWN_TURN, principal=ALICE)
    assert store.begin_turn(None, session, root)
    moved = root.model_copy(update={"status": "waiting", "version": 2, "lease_owner": None})

    def commit(output: str, expected_version: int = 1) -> None:
        store.commit(
            Commit(
                root=moved.model_copy(update={"output": output}),
                expected_version=expected_version,
                expected_status="running",
                expected_lease_owner="runner",
            )
        )

    with pytest.raises(AwsError, match="UnicodeEncodeError"):
        commit("\udfff")
    with pytest.raises(StaleCommitError):
        commit("fine", expected_version=7)  # a condition that failed: the turn moved on
    commit("fine")
    assert root_record(store, session_id, UNKNOWN_TURN).status == "waiting"


def test_an_answer_that_dynamodb_refuses_for_its_content_is_a_store_error_not_a_busy_turn(
    make_service: Callable[..., Service], store: DynamoDBStore, session_id: str
) -> None:
    turn = make_service().start_turn(session_id, "delete the prod-db record")
    request_id = turn.interactions[0].request_id
    with pytest.raises(AwsError, match="UnicodeEncodeError"):  # a principal DynamoDB cannot store
        store.answer_interaction(session_id, turn.turn_id, request_id, APPROVE, "\udfff", 2.0, approval_shaped=True)
    assert root_record(store, session_id, turn.turn_id).open_interactions == 1


def test_an_aws_failure_is_500_with_a_code_and_a_message_that_says_the_turn_is_resumable(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service()
    store = service.store
    assert isinstance(store, DynamoDBStore)

    def throttled(**_: object) -> None:
        raise RuntimeError("ThrottlingException: Rate exceeded")

    store.dynamodb.meta.events.register("before-call.dynamodb.GetItem", throttled)
    status, reply = http(build_app(service), "POST", f"/sessions/{session_id}/turns", {"prompt": "delete prod-db"})
    assert (status, reply["code"]) == (500, "aws_failed")
    assert "Rate exceeded" in reply["message"] and "retry the request" in reply["message"]
