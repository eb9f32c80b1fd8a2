"""What a turn's items hold: a turn or question written stores nothing for what holds nothing (no NULL
attribute; a question nothing for what holds its default either), so each is as small as it can be and
a question fits one write unit; and a tree written as the release before wrote it (every attribute, NULL
where empty) is answered, resumed, settled and canceled the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from resumable.service import Service
from resumable.store.codec import decode
from resumable.store.records import InteractionRecord
from tests.factories import executions
from tests.integration.helpers import _session_query, as_written_before, store_of

APPROVE = {"decision": "approve"}
PROMPT = "delete the prod-db record"


def _tree_items(service: Service, session_id: str) -> list[dict[str, Any]]:
    return [
        i
        for i in _session_query(store_of(service), session_id)
        if i.get("entity", {}).get("S") in ("turn", "interaction")
    ]


def _holding_nothing(item: dict[str, Any]) -> list[str]:
    """The attributes of a raw turn or question item that hold nothing: NULL, or for a question its
    record's default."""
    empty = [name for name, attribute in item.items() if attribute == {"NULL": True}]
    if item["entity"]["S"] == "interaction":
        fields, model = decode(item), InteractionRecord.model_fields
        empty += [
            name
            for name, held in fields.items()
            if name in model
            and not model[name].is_required()
            and held == model[name].get_default(call_default_factory=True)
        ]
    return empty


def test_turns_and_questions_store_no_attribute_that_holds_nothing(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service()
    turn = service.start_turn(session_id, PROMPT)
    asked = _tree_items(service, session_id)
    assert {i["entity"]["S"] for i in asked} == {"turn", "interaction"} and len(asked) == 3
    assert {i["sk"]["S"]: _holding_nothing(i) for i in asked} == {i["sk"]["S"]: [] for i in asked}
    done = service.submit_approval(session_id, turn.turn_id, turn.interactions[0].request_id, APPROVE)
    assert done.status == "completed"
    settled = _tree_items(service, session_id)
    assert {i["sk"]["S"]: _holding_nothing(i) for i in settled} == {i["sk"]["S"]: [] for i in settled}


def test_a_tree_written_as_before_with_null_attributes_is_answered_resumed_and_settled_the_same(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    turn = make_service().start_turn(session_id, PROMPT)
    as_written_before(store_of(make_service()), session_id)
    done = make_service().submit_approval(session_id, turn.turn_id, turn.interactions[0].request_id, APPROVE)
    assert (done.status, executions(ledger)) == ("completed", ["delete prod-db"])
    again = make_service().submit_approval(session_id, turn.turn_id, turn.interactions[0].request_id, APPROVE)
    assert (again.status, executions(ledger)) == ("completed", ["delete prod-db"])


def test_a_tree_written_as_before_with_null_attributes_is_canceled_the_same(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    turn = make_service().start_turn(session_id, PROMPT)
    as_written_before(store_of(make_service()), session_id)
    canceled = make_service().cancel(session_id, turn.turn_id)
    assert (canceled.status, executions(ledger)) == ("canceled", [])
    assert make_service().get_turn(session_id, turn.turn_id).status == "canceled"


def test_an_operators_inspect_shows_every_field_of_a_turn_and_a_question_as_items_written_before_did(
    make_service: Callable[..., Service], session_id: str
) -> None:
    operator = "arn:aws:iam::111122223333:user/operator"
    turn = make_service().start_turn(session_id, PROMPT)
    now = make_service(approver_principals=(operator,)).inspect(session_id, turn.turn_id, operator)
    as_written_before(store_of(make_service()), session_id)
    before = make_service(approver_principals=(operator,)).inspect(session_id, turn.turn_id, operator)
    assert len(now.turns) == 2 and len(now.interactions) == 1
    assert [sorted(t) for t in now.turns] == [sorted(t) for t in before.turns]
    assert [sorted(i) for i in now.interactions] == [sorted(i) for i in before.interactions]
    assert now.interactions[0]["principal"] is None and now.interactions[0]["dismissed_by"] == []
