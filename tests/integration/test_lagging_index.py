"""What reads an index, or reads without ``ConsistentRead``, and what it may act on while the index
lags (the embedded AWS's lag, resumable.local.lag): each path that once took a lagging read for the
table as it is has a test here that fails with the lag on and its fix taken out."""

from __future__ import annotations

from collections.abc import Callable

from resumable.local.lag import lagging
from resumable.service import Service
from tests.integration.helpers import APPROVE

PROMPT = "delete the prod-db record"
BEHIND = 200  # (requests: every write shows this late to a lagging read, longer than any of these tests' use cases)


def test_the_audit_trail_read_at_once_after_a_decision_shows_it_and_its_cursor_never_passes_it(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = make_service("nested", approver_principals=("alice",))
    view = service.start_turn(session_id, PROMPT)
    [question] = view.interactions
    with lagging(BEHIND, least=BEHIND):
        service.submit_approval(session_id, view.turn_id, question.request_id, APPROVE, "alice")
        page = service.audit(None)
        decided = [r for r in page.records if r.kind == "decision"]
        assert [r.request_id for r in decided] == [question.request_id], page
        # (an export chained on this page's ``until`` starts past it: the record had to be in this one)
        assert page.cursor is None
