"""What reads an index, or reads without ``ConsistentRead``, and what it may act on while the index
lags (the embedded AWS's lag, resumable.local.lag): each path that once took a lagging read for the
table as it is has a test here that fails with the lag on and its fix taken out."""

from __future__ import annotations

from collections.abc import Callable

from resumable.config import Settings
from resumable.local.lag import lagging
from resumable.service import Service
from resumable.service.operating.sweep import ATTEMPTS, STUCK_RECHECK_SECONDS
from tests.clock import FakeClock
from tests.integration.helpers import APPROVE, answered_but_not_resumed
from tests.integration.test_unloadable_snapshot import Breakage

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


def test_the_stuck_turns_counted_are_those_after_the_sweeps_own_moves(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, aws: Settings
) -> None:
    service = make_service()
    started = answered_but_not_resumed(service, session_id, clock)
    breakage = Breakage(aws, session_id, started.turn_id)
    breakage.corrupt_root_snapshot()
    for _ in range(ATTEMPTS):
        clock.advance(service.settings.stall_seconds)
        assert dict(make_service().sweep().moved) == {"answered_unresumed": 1}
    clock.advance(service.settings.stall_seconds)
    with lagging(BEHIND, least=BEHIND):  # (the index shows neither the giving up nor, later, the turn's move)
        gave_up = make_service().sweep()
        assert (gave_up.given_up, gave_up.stuck) == (1, 1)
    breakage.repair()
    clock.advance(STUCK_RECHECK_SECONDS)
    with lagging(BEHIND, least=BEHIND):
        tried_again = make_service().sweep()
        assert (dict(tried_again.moved), tried_again.stuck) == ({"answered_unresumed": 1}, 0)
    assert service.get_turn(session_id, started.turn_id).status == "completed"
