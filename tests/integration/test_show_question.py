"""A question found by its request id alone (GET /interactions/{requestId}, resumable show REQUEST), as
Slack, e-mail and the events name it: whatever its session and status, for whom it may show, and no
one else; found through a keys-only index, then read from the table itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from resumable.api.app import build_app
from resumable.exceptions import NotFoundError
from resumable.local.lag import lagging
from resumable.runtime.rules import parse_rules
from resumable.service import Service
from resumable.store import DynamoDBStore
from resumable.store.resources import REQUESTS_INDEX
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE, session_items
from tests.integration.helpers import http as request

ALICE = "arn:aws:iam::111122223333:user/alice"  # starts the turns, and is an approver
APPROVER = "arn:aws:iam::111122223333:user/approver"
BOB = "arn:aws:iam::111122223333:user/bob"  # neither


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    rule = {"tools": ["delete_*"], "required": 1, "approvers": [APPROVER, ALICE], "self_approval": False}
    return make_service("nested", approver_principals=(APPROVER,), approval_rules=parse_rules([rule]))


def settled_record(service: Service, session_id: str, request_id: str) -> Any:
    [found] = [i for i in service.store.list_interactions(session_id, None) if i.request_id == request_id]
    return found


def test_a_question_shows_by_its_request_id_alone_to_who_may_see_it_and_404s_alike_for_anyone_else(
    service: Service, session_id: str, clock: FakeClock
) -> None:
    started_at = clock.now()
    started = service.start_turn(session_id, "delete the prod-db record", principal=ALICE)
    [asked] = started.interactions
    api = build_app(service)

    status, mine = request(api, "GET", f"/interactions/{asked.request_id}", principal=ALICE)
    assert status == 200, mine
    assert (mine["sessionId"], mine["turnId"], mine["childTurnId"]) == (
        session_id,
        started.turn_id,
        started.children[0].turn_id,
    )
    assert (mine["status"], mine["startedBy"], mine["startedByYou"], mine["approvedByYou"]) == (
        "requested",
        ALICE,
        True,
        False,
    )
    assert mine["rule"]["selfApproval"] is False and mine["summary"] == "delete_record prod-db"
    status, theirs = request(api, "GET", f"/interactions/{asked.request_id}", principal=APPROVER)
    assert (status, theirs["startedByYou"]) == (200, False)

    unknown = f"r{'0' * 24}"
    refusals = [
        request(api, "GET", f"/interactions/{asked.request_id}", principal=BOB),
        request(api, "GET", f"/interactions/{unknown}", principal=BOB),
        request(api, "GET", f"/interactions/{'r' + 'a' * 5000}", principal=BOB),
    ]
    assert refusals[0] == refusals[1] == refusals[2], "another's, an unknown and a malformed id must read the same"
    status, said = refusals[0]
    assert (status, said["code"]) == (404, "not_found")
    assert said["message"].startswith("there is no question with that request id that you may see")

    # Dismissed by the approver: it says so to them alone.
    service.dismiss(session_id, started.turn_id, asked.request_id, APPROVER)
    assert request(api, "GET", f"/interactions/{asked.request_id}", principal=APPROVER)[1]["dismissedByYou"] is True
    assert request(api, "GET", f"/interactions/{asked.request_id}", principal=ALICE)[1]["dismissedByYou"] is False

    # Settled, it still shows, as it was decided, with the reader's part in it.
    service.submit_approval(session_id, started.turn_id, asked.request_id, APPROVE, APPROVER)
    status, settled = request(api, "GET", f"/interactions/{asked.request_id}", principal=APPROVER)
    assert (status, settled["status"], settled["decision"], settled["answeredBy"]) == (
        200,
        "answered",
        "approved",
        APPROVER,
    )
    assert settled["approvedByYou"] is True and settled["approvals"][0]["by"] == APPROVER

    # Past its retention (DynamoDB's TTL may not have taken it yet), it is gone.
    clock.current = float(settled_record(service, session_id, asked.request_id).purge_at or 0) + 1
    assert request(api, "GET", f"/interactions/{asked.request_id}", principal=APPROVER)[0] == 404
    clock.current = started_at

    # A deleted session's questions are gone, as its turns are.
    service.delete_session(session_id, ALICE)
    for reader in (ALICE, APPROVER):
        assert request(api, "GET", f"/interactions/{asked.request_id}", principal=reader)[0] == 404


def test_the_index_holds_keys_only_and_what_shows_is_read_from_the_table_even_while_the_index_lags(
    service: Service, session_id: str, store: DynamoDBStore, clock: FakeClock
) -> None:
    started = service.start_turn(session_id, "delete the prod-db record", principal=ALICE)
    [asked] = started.interactions
    [item] = [i for i in session_items(store, session_id) if i.get("entity") == "interaction"]
    assert "gsi5pk" not in item, "keyed on the item's own request_id: no attribute more"
    listed = store.dynamodb.query(
        TableName=store.table,
        IndexName=REQUESTS_INDEX,
        KeyConditionExpression="request_id = :r",
        ExpressionAttributeValues={":r": {"S": asked.request_id}},
    )["Items"]
    assert [sorted(i) for i in listed] == [["pk", "request_id", "sk"]], "keys only: the index is written once"

    # A decision link's item holds the question's request_id too (and so is in the index): passed by.
    link_key = "a" * 32
    assert store.record_link(session_id, link_key, (started.turn_id, asked.request_id, ALICE), "d", 1e12)
    assert service.show_interaction(asked.request_id, ALICE).request_id == asked.request_id

    with lagging(200, least=200):  # the index lists it late: one just asked is not found (yet) ...
        clock.advance(1)
        later = service.start_turn(f"{session_id}-2", "delete the prod-db record", principal=ALICE)
        with pytest.raises(NotFoundError, match="one asked a moment ago may not be listed yet"):
            service.show_interaction(later.interactions[0].request_id, ALICE)
        # ... and one it lists shows as the table holds it now, not as the index last saw it.
        service.submit_approval(session_id, started.turn_id, asked.request_id, APPROVE, APPROVER)
        assert service.show_interaction(asked.request_id, ALICE).decision == "approved"
    assert service.show_interaction(later.interactions[0].request_id, ALICE).status == "requested"
