"""Why an answer was refused, as the audit trail records it: from the error and the question as it is."""

from __future__ import annotations

from typing import Any

import pytest

from resumable.exceptions import ConflictError, ForbiddenError, GoneError, ServiceError
from resumable.service.answering.refusals import SAID, refusal_of
from resumable.service.caller import Caller
from resumable.store.records import InteractionRecord, Vote

RULE = {"tools": ["drop_*"], "approvers": ["bob", "carol"], "required": 2}
NOW = 100.0


def _asked(**changed: Any) -> InteractionRecord:
    fields = {
        "session_id": "s", "root_turn_id": "t", "turn_id": "t", "request_id": "r", "interrupt_id": "i",
        "name": "approval", "agent_path": ["a"], "status": "requested", "expires_at": NOW + 60,
        "created_at": 1.0, "updated_at": 1.0, "rule": RULE, "started_by": "bob",
    }  # fmt: skip
    return InteractionRecord.model_validate(fields | changed)


APPROVE = {"decision": "approve"}


@pytest.mark.parametrize(
    ("error", "asked", "response", "who", "refusal"),
    [
        (ForbiddenError("x"), _asked(), APPROVE, "bob", "self_approval"),
        (ForbiddenError("x"), _asked(started_by="dave"), APPROVE, "dave", "not_an_approver"),  # (not named either)
        (ForbiddenError("x"), _asked(), APPROVE, "mallory", "not_an_approver"),
        (ForbiddenError("x"), _asked(), {"decision": "deny"}, "mallory", "not_an_approver"),
        (ConflictError("x"), _asked(votes={"carol": Vote(at=2.0)}, vote_count=1), APPROVE, "carol", "duplicate_vote"),
        (ConflictError("x"), _asked(votes={"carol": Vote(at=2.0)}, vote_count=1), APPROVE, "bob", "other_input"),
        (ConflictError("x"), _asked(status="answered"), {"decision": "deny"}, "carol", "after_settlement"),
        (GoneError("x"), _asked(expires_at=NOW - 1), APPROVE, "carol", "after_settlement"),
        (GoneError("being canceled"), _asked(), APPROVE, "carol", "turn_canceled"),
    ],
)
def test_each_refusal_is_named_by_what_refused_it(
    error: ServiceError, asked: InteractionRecord, response: dict[str, Any], who: str, refusal: str
) -> None:
    assert refusal_of(error, asked, response, Caller(who), NOW) == refusal
    assert refusal in SAID, "each refusal has its fixed words on the trail"
