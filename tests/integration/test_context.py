"""What an approver is shown to judge a question: who started the turn and with what prompt, the agent's
own reason, the tool's risk and what it touches, what approving does; the inbox puts the riskiest of
the same hour first; an approver may dismiss a question (hidden for them only); a refused second
answer says whose the first was."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from resumable.exceptions import ConflictError, GoneError, NotFoundError, ValidationFailedError
from resumable.runtime.rules import parse_rules
from resumable.service import Service
from resumable.service.caller import Caller
from tests.clock import FakeClock
from tests.integration.helpers import ALICE, APPROVE

APPROVER = "arn:aws:iam::111122223333:user/approver"
OTHER_APPROVER = "arn:aws:iam::111122223333:user/other-approver"


@pytest.fixture
def make(make_service: Callable[..., Service]) -> Callable[[str], Service]:
    return lambda factory: make_service(factory, approver_principals=(APPROVER, OTHER_APPROVER))


def test_a_question_carries_who_asked_the_prompt_the_agents_reason_and_the_tools_risk(
    make: Callable[[str], Service],
) -> None:
    service = make("explains")
    alice = Caller("alice-subject", (), {"method": "jwt", "subject": "alice-subject"}, name="Alice Example")
    turn = service.start_turn("ctx-1", "tidy up after the migration " + "x" * 5000, principal=alice)
    [asked] = service.inbox(APPROVER).interactions
    assert (asked.started_by, asked.started_by_name) == ("alice-subject", "Alice Example")
    assert asked.root_prompt is not None and asked.root_prompt.startswith("tidy up after the migration")
    assert len(asked.root_prompt.encode()) < 2200 and "[cut at 2048 bytes" in asked.root_prompt
    assert asked.explanation == "The migration finished, so prod-db is no longer used."
    assert (asked.risk, asked.impact, asked.confirm) == (
        "destructive",
        "Drops the database and every backup of it",
        True,
    )
    assert asked.summary == "drop_database prod-db"
    assert turn.interactions[0].explanation == asked.explanation  # (the turn shows it too)


def test_a_calls_own_reason_stands_in_when_the_model_said_nothing(make: Callable[[str], Service]) -> None:
    service = make("low_risk")
    service.start_turn("ctx-2", "clear the eu cache", principal=ALICE)
    [asked] = service.inbox(APPROVER).interactions
    assert (asked.explanation, asked.risk, asked.confirm, asked.started_by_name) == ("stale prices", "low", False, None)
    assert asked.summary == "clear_cache eu stale prices"


def test_a_rule_raises_the_risk_and_asks_for_a_confirmation(make_service: Callable[..., Service]) -> None:
    rules = parse_rules(
        '[{"tools": ["clear_*"], "risk": "high", "impact": "Every shopper sees cold prices", "confirm": true}]'
    )
    service = make_service("low_risk", approver_principals=(APPROVER,), approval_rules=rules)
    service.start_turn("ctx-3", "clear the eu cache", principal=ALICE)
    [asked] = service.inbox(APPROVER).interactions
    assert (asked.risk, asked.impact, asked.confirm) == ("high", "Every shopper sees cold prices", True)


def test_the_riskiest_question_due_in_the_same_hour_comes_first(
    make: Callable[[str], Service], clock: FakeClock
) -> None:
    low = make("low_risk").start_turn("ctx-low", "clear", principal=ALICE)
    clock.advance(60)  # (asked later, so it expires later: by expiry alone it would come second)
    high = make("explains").start_turn("ctx-high", "drop", principal=ALICE)
    listed = [i.request_id for i in make("explains").inbox(APPROVER).interactions]
    assert listed == [high.interactions[0].request_id, low.interactions[0].request_id]
    clock.advance(3600)  # a question due an hour later comes after, however risky
    later = make("explains").start_turn("ctx-later", "drop", principal=ALICE)
    listed = [i.request_id for i in make("explains").inbox(APPROVER).interactions]
    assert listed[-1] == later.interactions[0].request_id


def test_a_dismissed_question_leaves_only_the_dismissers_inbox_and_can_come_back(
    make: Callable[[str], Service],
) -> None:
    service = make("explains")
    turn = service.start_turn("ctx-dismiss", "drop", principal=ALICE)
    request = turn.interactions[0].request_id
    shown = service.dismiss("ctx-dismiss", turn.turn_id, request, APPROVER)
    assert shown.dismissed_by_you and shown.status == "requested"
    assert service.dismiss("ctx-dismiss", turn.turn_id, request, APPROVER).dismissed_by_you  # (again: no change)
    stored = service.store.get_interaction("ctx-dismiss", turn.turn_id, request)
    assert stored is not None and stored.dismissed_by == [APPROVER]
    assert service.inbox(APPROVER).interactions == []
    assert [i.request_id for i in service.inbox(OTHER_APPROVER).interactions] == [request]
    assert [i.request_id for i in service.inbox(ALICE).interactions] == [request]
    [hidden] = service.inbox(APPROVER, dismissed=True).interactions
    assert hidden.dismissed_by_you
    assert not service.dismiss("ctx-dismiss", turn.turn_id, request, APPROVER, dismissed=False).dismissed_by_you
    assert [i.request_id for i in service.inbox(APPROVER).interactions] == [request]
    # Dismissing answers nothing: the question still takes an answer, and then cannot be dismissed.
    service.dismiss("ctx-dismiss", turn.turn_id, request, APPROVER)
    assert service.submit_approval("ctx-dismiss", turn.turn_id, request, APPROVE, OTHER_APPROVER).status == "completed"
    with pytest.raises(GoneError, match=r"no longer waiting .*nothing to dismiss"):
        service.dismiss("ctx-dismiss", turn.turn_id, request, OTHER_APPROVER)
    with pytest.raises(NotFoundError, match="nothing was dismissed"):
        service.dismiss("ctx-dismiss", turn.turn_id, "r" + "0" * 24, APPROVER)
    bob = "arn:aws:iam::111122223333:user/bob"
    other = service.start_turn("ctx-dismiss-2", "drop", principal=ALICE)
    with pytest.raises(NotFoundError):  # not his session, and no approver: he cannot see it
        service.dismiss("ctx-dismiss-2", other.turn_id, other.interactions[0].request_id, bob)


def test_a_second_answer_from_the_same_person_is_told_it_was_theirs_and_from_where(
    make: Callable[[str], Service],
) -> None:
    service = make("explains")
    turn = service.start_turn("ctx-409", "drop", principal=ALICE)
    request = turn.interactions[0].request_id
    approver = Caller(APPROVER, (), {"method": "iam", "arn": APPROVER}, via="cli")
    service.submit_approval("ctx-409", turn.turn_id, request, APPROVE, approver)
    deny = {"decision": "deny", "message": "no"}
    with pytest.raises(ConflictError, match=r"^you already answered .* \(from the CLI at 2027-") as mine:
        service.submit_approval("ctx-409", turn.turn_id, request, deny, Caller(APPROVER, via="page"))
    assert mine.value.answered is not None
    assert {k: mine.value.answered[k] for k in ("yours", "via", "decision")} == {
        "yours": True,
        "via": "cli",
        "decision": "approved",
    }
    with pytest.raises(ConflictError, match=rf"^{APPROVER} already answered") as theirs:
        service.submit_approval("ctx-409", turn.turn_id, request, deny, OTHER_APPROVER)
    assert theirs.value.answered is not None and theirs.value.answered["yours"] is False
    [settled] = service.get_turn("ctx-409", turn.turn_id).interactions
    assert (settled.decision, settled.answered_via) == ("approved", "cli")


def test_the_decision_says_approved_with_edits_denied_or_answered(make_service: Callable[..., Service]) -> None:
    edits = make_service("nested_editable", approver_principals=(APPROVER,))
    turn = edits.start_turn("ctx-edit", "delete", principal=ALICE)
    request = turn.interactions[0].request_id
    edited = {"decision": "approve", "input": {"name": "prod-db-replica"}}
    [done] = edits.submit_approval("ctx-edit", turn.turn_id, request, edited, APPROVER).interactions
    assert (done.decision, done.approved_input) == ("approved_with_edits", {"name": "prod-db-replica"})
    denied = edits.start_turn("ctx-deny", "delete", principal=ALICE)
    no = {"decision": "deny", "message": "no"}
    [done] = edits.submit_approval("ctx-deny", denied.turn_id, denied.interactions[0].request_id, no).interactions
    assert (done.decision, done.approved_input) == ("denied", None)
    asks = make_service("asks_a_question", approver_principals=(APPROVER,))
    question = asks.start_turn("ctx-ask", "which region", principal=ALICE)
    [done] = asks.submit_approval(
        "ctx-ask", question.turn_id, question.interactions[0].request_id, "eu-west-1"
    ).interactions
    assert (done.decision, done.summary) == ("answered", "region")


def test_the_conversation_so_far_reads_a_page_at_a_time_the_sub_agents_own_where_the_root_keeps_it(
    make_service: Callable[..., Service],
) -> None:
    service = make_service("nested", approver_principals=(APPROVER,))
    turn = service.start_turn("ctx-talk", "please delete prod-db", principal=ALICE)
    page = service.conversation("ctx-talk", turn.turn_id, APPROVER)
    assert (page.agent, page.total, page.start, page.before, page.note) == ("orchestrator", 2, 0, None, None)
    assert page.messages[0] == {"role": "user", "content": [{"text": "please delete prod-db"}]}
    assert page.messages[1]["content"] == [{"toolUse": {"name": "db_admin", "input": {"prompt": "delete prod-db"}}}]
    latest = service.conversation("ctx-talk", turn.turn_id, ALICE, limit=1)
    assert (latest.start, latest.before, latest.messages) == (1, 1, page.messages[1:])
    earlier = service.conversation("ctx-talk", turn.turn_id, ALICE, before=latest.before, limit=1)
    assert (earlier.start, earlier.before, earlier.messages) == (0, None, page.messages[:1])

    child = turn.children[0].turn_id
    asked = service.conversation("ctx-talk", child, APPROVER)
    assert (asked.agent, asked.total, asked.note) == ("db_admin", 2, None)
    assert asked.messages[1]["content"] == [{"toolUse": {"name": "delete_record", "input": {"name": "prod-db"}}}]

    with pytest.raises(NotFoundError):  # (not bob's session: not his to read)
        service.conversation("ctx-talk", turn.turn_id, "arn:aws:iam::111122223333:user/bob")
    with pytest.raises(ValidationFailedError, match="must be 1 to 100"):
        service.conversation("ctx-talk", turn.turn_id, ALICE, limit=101)

    keeps_its_own = make_service("nested_preserving", approver_principals=(APPROVER,))
    own = keeps_its_own.start_turn("ctx-talk-own", "please delete prod-db", principal=ALICE)
    shown = keeps_its_own.conversation("ctx-talk-own", own.children[0].turn_id, ALICE)
    assert shown.agent == "orchestrator" and shown.note is not None and "db_admin's own conversation" in shown.note


def test_a_long_reply_beside_a_large_input_still_shows_as_text(make_service: Callable[..., Service]) -> None:
    """A question whose reason is over its bound keeps the agent's words as (cut) text, never a preview
    object: every view of it still reads."""
    from resumable import Agent, ScriptedModel
    from tests.agents import calls, says
    from tests.factories import drop_database

    reply = calls(("x-1", "drop_database", {"name": "db-" + "x" * 20_000}))
    reply["content"].insert(0, {"text": "Because. " * 400})
    service = make_service(
        lambda _: Agent(name="janitor", model=ScriptedModel([reply, says("ok")]), tools=[drop_database]),
        approver_principals=(APPROVER,),
    )
    turn = service.start_turn("ctx-long", "drop it", principal=ALICE)
    [asked] = service.inbox(APPROVER).interactions
    assert isinstance(asked.explanation, str) and asked.explanation.startswith("Because. Because.")
    assert asked.summary == "drop_database" and asked.reason["input"]["truncated"] is True
    assert service.get_turn("ctx-long", turn.turn_id).interactions[0].explanation == asked.explanation


def test_dismissals_are_bounded_retried_and_never_outlive_the_question(
    make_service: Callable[..., Service], monkeypatch: pytest.MonkeyPatch
) -> None:
    from resumable.service.answering import dismissal

    third = "arn:aws:iam::111122223333:user/approver-3"
    service = make_service("explains", approver_principals=(APPROVER, OTHER_APPROVER, third))
    turn = service.start_turn("ctx-bounds", "drop", principal=ALICE)
    request = turn.interactions[0].request_id
    monkeypatch.setattr(dismissal, "MAX_DISMISSALS", 2)
    service.dismiss("ctx-bounds", turn.turn_id, request, APPROVER)
    service.dismiss("ctx-bounds", turn.turn_id, request, OTHER_APPROVER)
    with pytest.raises(ValidationFailedError, match="dismissed by 2 people already"):
        service.dismiss("ctx-bounds", turn.turn_id, request, third)

    # Someone answers between the read and the write: the write is refused, and it says why.
    real = service.store.set_dismissed
    answered = []

    def answered_first(interaction: object, dismissed_by: list[str], now: float) -> bool:
        if not answered:
            answered.append(service.submit_approval("ctx-bounds", turn.turn_id, request, APPROVE, ALICE))
        return real(interaction, dismissed_by, now)  # type: ignore[arg-type]

    monkeypatch.setattr(service.store, "set_dismissed", answered_first)
    with pytest.raises(GoneError, match="no longer waiting"):
        service.dismiss("ctx-bounds", turn.turn_id, request, APPROVER, dismissed=False)
    stored = service.store.get_interaction("ctx-bounds", turn.turn_id, request)
    assert stored is not None and stored.status == "answered"

    # Others dismissing it at every attempt: a clear 409 after a few tries, nothing half written.
    other = service.start_turn("ctx-busy", "drop", principal=ALICE)
    monkeypatch.setattr(service.store, "set_dismissed", lambda *_: False)
    with pytest.raises(ConflictError, match="kept changing while it was dismissed"):
        service.dismiss("ctx-busy", other.turn_id, other.interactions[0].request_id, APPROVER)

    # A deleted session's question cannot be dismissed (nor found).
    service.delete_session("ctx-busy", ALICE)
    with pytest.raises(NotFoundError):
        service.dismiss("ctx-busy", other.turn_id, other.interactions[0].request_id, APPROVER)
