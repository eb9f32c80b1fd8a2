"""Approval rules on the embedded AWS: who may answer a question, how many must agree, and settlement
exactly once whatever the order and timing of the votes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel
from resumable.aws.stepfunctions import TaskTokens
from resumable.config import Settings
from resumable.exceptions import (
    ConflictError,
    ForbiddenError,
    GoneError,
    NotFoundError,
    ResumableError,
    StaleCommitError,
)
from resumable.runtime.rules import parse_rules
from resumable.service import Service
from resumable.service.advancing.settlement import settle_tree
from resumable.service.agent_factory import load_factory
from resumable.service.answering.escalation import escalate
from resumable.service.answering.votes import answer_under_rule
from resumable.service.caller import Caller
from resumable.service.views import TurnView
from resumable.store import DynamoDBStore
from resumable.store.codec import key, root_sk
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.factories import delete_record, executions
from tests.integration.helpers import APPROVE, as_written_before, at_once, session_items, store_of

OWNER = Caller("arn:aws:iam::123456789012:role/agent-runner")
ALICE, BOB, CAROL = Caller("alice"), Caller("bob"), Caller("carol")
DAVE = Caller("dave", groups=("dba",))
DENY = {"decision": "deny", "message": "not today"}
PROMPT = "delete the prod-db record"


def ruled(make_service: Callable[..., Service], *rules: dict[str, Any], factory: Any = "nested") -> Service:
    """A service whose deployment has ``rules``, where alice, bob, carol and the dba group are approvers."""
    return make_service(
        factory,
        approval_rules=parse_rules(list(rules)),
        approver_principals=("alice", "bob", "carol", "erin-*"),
        approver_groups=("dba",),
    )


def question(view: TurnView) -> Any:
    [interaction] = [i for i in view.interactions if i.status == "requested"]
    return interaction


def answer(service: Service, view: TurnView, response: dict[str, Any], principal: str) -> TurnView:
    return service.submit_approval(view.session_id, view.turn_id, question(view).request_id, response, principal)


@pytest.mark.parametrize("factory", ["nested", "strands:nested"])
def test_two_approvers_must_agree_and_the_second_settles_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path, factory: str
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2, "name": "two-person delete"}, factory=factory)
    started = service.start_turn(session_id, PROMPT, OWNER)
    asked = question(started)
    assert asked.rule is not None
    assert (asked.rule.name, asked.rule.required, asked.rule.self_approval) == ("two-person delete", 2, False)
    assert "rule" not in asked.reason  # shown as the question's rule, not in what the agent said

    first = answer(service, started, APPROVE, ALICE)
    assert first.status == "waiting"
    [waiting] = first.interactions
    assert waiting.status == "requested"
    assert [a.by for a in waiting.approvals] == ["alice"]
    assert executions(ledger) == []

    with pytest.raises(ConflictError, match=r"you \(alice\) already approved .* \(1 of 2 approvals"):
        answer(service, started, APPROVE, ALICE)

    # The vote that waits is an event of its own (Slack draws its message again by it); the settling one is not
    [voted] = _events(service, session_id, "Interaction Voted")
    assert {k: voted[k] for k in ("requestId", "by", "approvals", "required")} == {
        "requestId": asked.request_id, "by": "alice", "approvals": 1, "required": 2,
    }  # fmt: skip
    [requested] = _events(service, session_id, "Interaction Requested")
    assert (requested["startedBy"], requested["rootPrompt"], requested["confirm"]) == (OWNER.identity, PROMPT, False)

    done = answer(service, started, APPROVE, BOB)
    assert done.status == "completed"
    assert len(_events(service, session_id, "Interaction Voted")) == 1
    [settled] = done.interactions
    assert (settled.status, settled.response, settled.answered_by) == ("answered", APPROVE, "bob")
    assert [a.by for a in settled.approvals] == ["alice", "bob"]
    assert executions(ledger) == ["delete prod-db"]
    # A voter's replay of the same answer after it settled is the same result, as for any answer.
    assert answer_again(service, started, settled.request_id, ALICE).status == "completed"


def answer_again(service: Service, started: TurnView, request_id: str, principal: str) -> TurnView:
    return service.submit_approval(started.session_id, started.turn_id, request_id, APPROVE, principal)


def test_someone_outside_the_rules_approvers_is_refused_naming_the_rule_and_nothing_is_recorded(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_record"], "approvers": ["bob", "group:dba"], "name": "dba only"})
    started = service.start_turn(session_id, PROMPT, OWNER)
    before = _interaction_item(service, session_id)

    for response in (APPROVE, DENY):
        with pytest.raises(ForbiddenError, match="alice is not one of the approvers of the approval rule 'dba only'"):
            answer(service, started, response, ALICE)
    assert _interaction_item(service, session_id) == before
    # A member of a named group may answer: one approval settles it (required 1).
    assert answer(service, started, APPROVE, DAVE).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def _interaction_item(service: Service, session_id: str) -> dict[str, Any]:
    [item] = [i for i in session_items(store_of(service), session_id) if i.get("entity") == "interaction"]
    return item


@pytest.mark.parametrize(
    ("rule", "may_approve_own"),
    [
        ({"tools": ["delete_*"], "required": 2}, False),  # two or more: not by default
        ({"tools": ["delete_*"], "required": 2, "self_approval": True}, True),
        ({"tools": ["delete_*"]}, True),  # one: yes by default, as without a rule
        ({"tools": ["delete_*"], "self_approval": False}, False),
    ],
)
def test_the_principal_who_started_the_turn_approves_its_own_call_only_where_the_rule_allows(
    make_service: Callable[..., Service], session_id: str, rule: dict[str, Any], may_approve_own: bool
) -> None:
    service = ruled(make_service, rule)
    erin = Caller("erin-oncall")  # an approver, and the one who starts the turn
    started = service.start_turn(session_id, PROMPT, erin)
    if may_approve_own:
        view = answer(service, started, APPROVE, erin)
        [asked] = view.interactions
        assert [a.by for a in asked.approvals] == ["erin-oncall"]
        assert view.status == ("waiting" if asked.rule and asked.rule.required == 2 else "completed")
        return
    with pytest.raises(ForbiddenError, match="erin-oncall started this turn"):
        answer(service, started, APPROVE, erin)
    # They may still deny their own call (as they may cancel their own turn).
    assert answer(service, started, DENY, erin).status == "completed"


def test_a_starter_the_rules_approvers_do_not_name_may_withdraw_their_own_call_but_not_approve_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    rule = {"tools": ["delete_*"], "approvers": ["alice", "bob"], "required": 2}
    service = ruled(make_service, rule, factory=_two_turns)
    started = service.start_turn(session_id, PROMPT, OWNER)
    with pytest.raises(ForbiddenError, match="is not one of the approvers"):
        answer(service, started, APPROVE, OWNER)
    denied = answer(service, started, DENY, OWNER)  # their own call: withdrawn
    assert denied.status == "completed" and denied.interactions[0].decision == "denied"
    # A turn alice started in the owner's session: the owner did not start it, so may not deny its call
    second = service.start_turn(session_id, PROMPT, ALICE)
    with pytest.raises(ForbiddenError, match="is not one of the approvers"):
        answer(service, second, DENY, OWNER)
    assert executions(ledger) == []


def test_the_owner_did_not_start_a_turn_the_application_started_in_their_session_so_may_not_withdraw_it(
    make_service: Callable[..., Service], session_id: str
) -> None:
    rule = {"tools": ["delete_*"], "approvers": ["alice", "bob"], "required": 2}
    service = ruled(make_service, rule, factory=_two_turns)
    first = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, first, DENY, OWNER)  # (their own: withdrawn)
    second = service.start_turn(session_id, PROMPT, None)  # the application, in the owner's session
    assert question(second).started_by == "application"
    with pytest.raises(ForbiddenError, match="is not one of the approvers"):
        answer(service, second, DENY, OWNER)


def test_a_deny_settles_the_question_at_once_whatever_was_approved_before(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 3})
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)

    denied = answer(service, started, DENY, CAROL)

    assert denied.status == "completed"
    [settled] = denied.interactions
    assert (settled.response, settled.answered_by) == (DENY, "carol")
    assert [a.by for a in settled.approvals] == ["alice"]  # what was approved before stays known
    assert executions(ledger) == []
    with pytest.raises(ConflictError, match="already answered"):
        answer_again(service, started, settled.request_id, ALICE)


def test_every_approval_approves_the_same_input_or_is_refused_naming_the_one_approved(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2, "edits": True})
    started = service.start_turn(session_id, PROMPT, OWNER)
    assert question(started).editable
    edited = {"decision": "approve", "input": {"name": "staging-db"}}
    answer(service, started, edited, ALICE)

    for other in (APPROVE, {"decision": "approve", "input": {"name": "test-db"}}):
        with pytest.raises(ConflictError, match=re.escape('approved so far with {"name": "staging-db"}')) as refused:
            answer(service, started, other, BOB)
        assert refused.value.winning == edited

    assert answer(service, started, edited, BOB).status == "completed"
    assert executions(ledger) == ["delete staging-db"]


def test_fifty_votes_at_once_from_ten_approvers_settle_once_with_two_votes_and_run_the_action_once(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2})
    started = service.start_turn(session_id, PROMPT, OWNER)
    request = question(started).request_id
    voters = [Caller(f"erin-{n % 10}") for n in range(50)]
    services = [ruled(make_service, {"tools": ["delete_*"], "required": 2}) for _ in voters]

    outcomes = at_once(
        [
            partial(s.submit_approval, session_id, started.turn_id, request, dict(APPROVE), voter)
            for s, voter in zip(services, voters, strict=True)
        ]
    )

    errors = [o for o in outcomes if isinstance(o, Exception)]
    assert all(isinstance(e, ResumableError) for e in errors), errors
    final = service.get_turn(session_id, started.turn_id)
    [settled] = final.interactions
    assert (final.status, settled.status, settled.response) == ("completed", "answered", APPROVE)
    voted = [a.by for a in settled.approvals]
    assert len(voted) == 2 and len(set(voted)) == 2 and settled.answered_by == voted[1]
    assert executions(ledger) == ["delete prod-db"]
    # Each refusal says why: a second vote of the same approver, or one that came as it settled.
    assert all(isinstance(e, ConflictError) or "retry" in str(e) for e in errors), errors
    # One event for the one vote that waited, by the one who gave it; none for any refused or settling one
    [waited] = _events(service, session_id, "Interaction Voted")
    assert (waited["by"], waited["approvals"], waited["required"]) == (voted[0], 1, 2)


def test_an_approval_and_a_deny_at_once_settle_once_and_the_action_runs_only_if_the_approval_settled_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    rule = {"tools": ["delete_*"], "required": 2}
    service = ruled(make_service, rule)
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)
    request = question(started).request_id
    bob, carol = ruled(make_service, rule), ruled(make_service, rule)

    outcomes = at_once(
        [
            partial(bob.submit_approval, session_id, started.turn_id, request, dict(APPROVE), BOB),
            partial(carol.submit_approval, session_id, started.turn_id, request, dict(DENY), CAROL),
        ]
    )

    [won] = [o for o in outcomes if isinstance(o, TurnView)]
    [lost] = [o for o in outcomes if isinstance(o, Exception)]
    assert isinstance(lost, ConflictError)
    final = service.get_turn(session_id, started.turn_id)
    [settled] = final.interactions
    assert final.status == "completed" and won.interactions[0].response == settled.response
    assert executions(ledger) == (["delete prod-db"] if settled.response == APPROVE else [])


def test_a_vote_read_before_another_landed_is_counted_with_it_never_over_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """Bob's vote was read when the question had no votes; Alice's landed before Bob's write. Bob's
    write is refused (the question holds another number of votes), read again, and settles it with both."""
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2})
    started = service.start_turn(session_id, PROMPT, OWNER)
    asked = question(started)
    stale = service.store.get_interaction(session_id, started.turn_id, asked.request_id)
    assert stale is not None and stale.votes == {}
    answer(service, started, APPROVE, ALICE)

    outcome = answer_under_rule(service.deps, stale, dict(APPROVE), BOB, child_turn_id=None)

    assert outcome.outcome == "answered"
    settled = service.store.get_interaction(session_id, started.turn_id, asked.request_id)
    assert settled is not None and (settled.status, set(settled.votes)) == ("answered", {"alice", "bob"})
    # Bob's client, told nothing (the process stopped there), sends it again: the turn resumes once.
    assert answer_again(service, started, asked.request_id, BOB).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def _inbox(service: Service, principal: str, limit: int = 50) -> list[Any]:
    """Every question of ``principal``'s inbox, page by page."""
    shown, cursor = [], None
    while True:
        page = service.inbox(principal, limit=limit, cursor=cursor)
        shown += page.interactions
        if page.cursor is None:
            return shown
        cursor = page.cursor


def test_the_inbox_shows_each_reader_the_questions_it_may_answer_with_the_approvals_so_far(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "approvers": ["bob", "group:dba"], "required": 2})
    started = service.start_turn(session_id, PROMPT, OWNER)
    request = question(started).request_id

    assert [i.request_id for i in _inbox(service, BOB)] == [request]
    assert [i.request_id for i in _inbox(service, DAVE)] == [request]
    assert _inbox(service, ALICE) == []  # an approver of the deployment, not of this rule
    assert _inbox(service, OWNER) == []  # their own session's question, which they may not approve
    # ...but among the questions of the turns they started, waiting for others (to withdraw, or cancel)
    [theirs] = service.inbox(OWNER, started=True).interactions
    assert theirs.request_id == request and theirs.started_by_you and not theirs.approved_by_you
    assert service.inbox(BOB, started=True).interactions == [], "bob started nothing"

    answer(service, started, APPROVE, BOB)

    [bobs] = _inbox(service, BOB)
    assert bobs.approved_by_you and [a.by for a in bobs.approvals] == ["bob"]
    assert bobs.rule is not None and (bobs.rule.required, bobs.rule.approvers) == (2, ["bob", "group:dba"])
    [daves] = _inbox(service, DAVE)
    assert not daves.approved_by_you and [a.by for a in daves.approvals] == ["bob"]


def test_an_inbox_page_reads_on_past_questions_the_reader_may_not_answer_and_loses_none(
    make_service: Callable[..., Service],
) -> None:
    dba_only = ruled(make_service, {"tools": ["delete_*"], "approvers": ["group:dba"]})
    anyone = ruled(make_service)
    hidden = {question(dba_only.start_turn(f"hidden-{n}", PROMPT, OWNER)).request_id for n in range(4)}
    shown = {question(anyone.start_turn(f"shown-{n}", PROMPT, OWNER)).request_id for n in range(3)}

    in_order = [i.request_id for i in _inbox(anyone, None) if i.request_id in shown]
    for limit in (1, 2, 50):
        assert [i.request_id for i in _inbox(anyone, ALICE, limit)] == in_order
    assert {i.request_id for i in _inbox(anyone, DAVE, 2)} == hidden | shown
    # The index holds the hidden ones first (their sessions sort first): a page reads on past them (up
    # to three reads), and one that found nothing to show still says where to read on.
    assert len(anyone.inbox(ALICE, limit=2).interactions) == 2
    empty = anyone.inbox(ALICE, limit=1)
    assert (empty.interactions, empty.cursor is not None) == ([], True)


def test_a_workflow_waiting_on_the_turn_is_told_once_when_the_question_settles_never_at_a_vote(
    aws: Settings, clock: FakeClock, session_id: str, ledger: Path
) -> None:
    told: list[str] = []

    class StepFunctions:
        """AWS's Step Functions client as the task token reaches it (what it was sent, nothing else)."""

        def send_task_success(self, taskToken: str, output: str) -> None:  # noqa: N803
            told.append(f"success {taskToken} {json.loads(output)['status']}")

        def send_task_failure(self, taskToken: str, error: str, cause: str) -> None:  # noqa: N803
            told.append(f"failure {taskToken} {error}")

    settings = aws.model_copy(
        update={
            "approval_rules": parse_rules([{"tools": ["delete_*"], "required": 2}]),
            "approver_principals": ("alice", "bob"),
            "agent_factory": "tests.factories:nested",
        }
    )
    service = Service(DynamoDBStore(settings), settings, clock, task_tokens=TaskTokens(settings, StepFunctions()))
    started = service.start_turn(session_id, PROMPT, OWNER, workflow=True)
    store_of(service).dynamodb.update_item(  # what the workflow's own task writes once it waits
        TableName=settings.table_name,
        Key=key(session_id, root_sk(started.turn_id)),
        UpdateExpression="SET task_token = :token",
        ExpressionAttributeValues={":token": {"S": "token-1"}},
    )

    assert answer(service, started, APPROVE, ALICE).status == "waiting"
    assert told == []
    assert answer(service, started, APPROVE, BOB).status == "completed"
    assert told == ["success token-1 completed"]


def _two_turns(context: Any) -> Agent:
    """An agent that asks to delete prod-db in each of two turns."""
    delete = [calls((f"o-{n}", "delete_record", {"name": "prod-db"})) for n in (1, 2)]
    return Agent(
        name="ops", model=ScriptedModel([delete[0], says("done"), delete[1], says("done again")]), tools=[delete_record]
    )


def test_self_approval_is_about_who_started_the_turn_not_whose_session_it_is(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """Alice, an approver, starts a turn in the owner's session: she may not approve it; the owner,
    who did not start this one, may."""
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2}, factory=_two_turns)
    first = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, first, DENY, BOB)
    second = service.start_turn(session_id, PROMPT, ALICE)
    assert service.store.get_session(session_id).principal == OWNER.identity  # type: ignore[union-attr]

    with pytest.raises(ForbiddenError, match="alice started this turn"):
        answer(service, second, APPROVE, ALICE)
    assert answer(service, second, APPROVE, OWNER).status == "waiting"
    assert answer(service, second, APPROVE, BOB).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_one_who_approved_may_still_deny_and_that_settles_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2})
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)

    denied = answer(service, started, DENY, ALICE)

    [settled] = denied.interactions
    assert (denied.status, settled.response, [a.by for a in settled.approvals]) == ("completed", DENY, ["alice"])
    assert executions(ledger) == []


def test_a_principal_who_may_not_see_the_session_gets_404_not_the_rule(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "approvers": ["bob"], "name": "secret rule"})
    started = service.start_turn(session_id, PROMPT, OWNER)
    stranger = Caller("mallory")  # neither the session's principal nor an approver

    for response in (APPROVE, DENY):
        with pytest.raises(NotFoundError) as refused:
            answer(service, started, response, stranger)
        assert "secret rule" not in str(refused.value)


def test_after_it_settled_only_those_the_rule_lets_answer_are_told_their_answer_stands(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "approvers": ["bob", "carol"]})
    started = service.start_turn(session_id, PROMPT, OWNER)
    request = question(started).request_id
    answer(service, started, APPROVE, BOB)

    assert answer_again(service, started, request, CAROL).status == "completed"
    with pytest.raises(ForbiddenError, match="alice is not one of the approvers"):
        answer_again(service, started, request, ALICE)


def test_an_edit_that_leaves_the_input_as_asked_is_the_same_approval_as_none(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2, "edits": True})
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, {"decision": "approve", "input": {"name": "prod-db"}}, ALICE)  # the page's Edit, unchanged

    assert answer(service, started, APPROVE, BOB).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_votes_given_stay_on_a_question_its_cancel_supersedes_and_none_is_taken_after(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2})
    started = service.start_turn(session_id, PROMPT, OWNER)
    request = question(started).request_id
    read_before_the_vote = service.store.load_tree(session_id, started.turn_id)
    stale = service.store.get_interaction(session_id, started.turn_id, request)
    answer(service, started, APPROVE, ALICE)

    # A settlement decided on what it read before the vote is refused (it would write the record
    # without the vote), and decides again.
    with pytest.raises(StaleCommitError):
        settle_tree(service.deps, read_before_the_vote, "canceled", "superseded", "canceled on request")  # type: ignore[arg-type]
    canceled = service.cancel(session_id, started.turn_id, OWNER)
    [closed] = canceled.interactions
    assert (closed.status, [a.by for a in closed.approvals]) == ("superseded", ["alice"])
    # A vote read before the cancel is not taken once the question is superseded.
    assert stale is not None
    late = answer_under_rule(service.deps, stale, dict(APPROVE), BOB, child_turn_id=None)
    assert late.outcome in ("refused", "turn_busy")
    with pytest.raises(GoneError):
        answer(service, started, APPROVE, BOB)


def test_a_question_stored_before_rules_existed_is_answered_as_it_was(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = ruled(make_service)
    started = service.start_turn(session_id, PROMPT, OWNER)
    item = _interaction_item(service, session_id)
    store_of(service).dynamodb.update_item(
        TableName=service.settings.table_name,
        Key={"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}},
        UpdateExpression="REMOVE #rule, votes, vote_count, started_by, escalated_at",
        ExpressionAttributeNames={"#rule": "rule"},
    )

    assert answer(service, started, APPROVE, ALICE).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def _events(service: Service, session_id: str, kind: str) -> list[dict[str, Any]]:
    found = [
        i for i in session_items(store_of(service), session_id) if i.get("entity") == "event" and i["type"] == kind
    ]
    return [i["detail"] if isinstance(i["detail"], dict) else json.loads(i["detail"]) for i in found]


ESCALATING = {
    "tools": ["delete_*"],
    "approvers": ["bob"],
    "escalate_after": "1h",
    "escalate_to": ["carol"],
    "name": "bob, then carol",
}


def test_a_question_nobody_settled_in_time_escalates_once_and_then_its_new_approvers_may_answer(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = ruled(make_service, ESCALATING)
    started = service.start_turn(session_id, PROMPT, OWNER)
    with pytest.raises(ForbiddenError, match=r"carol is not one of the approvers .* \(approvers: bob\)"):
        answer(service, started, APPROVE, CAROL)
    assert _inbox(service, CAROL) == []
    clock.advance(3600 - 1)
    assert service.sweep().escalated == 0

    clock.advance(2)  # the sweeper's index has the turn due a look at its escalation, not only its expiry
    read_before = service.store.load_tree(session_id, started.turn_id)
    reports = at_once([ruled(make_service, ESCALATING).sweep for _ in range(3)])

    assert sum(r.escalated for r in reports if not isinstance(r, Exception)) == 1, reports
    assert read_before is not None and escalate(service.deps, read_before, clock.now()) == 0  # once, whoever tries
    [row] = _inbox(service, CAROL)
    assert row.escalated_at is not None and row.rule is not None and row.rule.escalate_to == ["carol"]
    [requested] = _events(service, session_id, "Interaction Requested")
    assert requested["rule"]["escalateTo"] == ["carol"]  # (camelCase, as every event's fields)
    [event] = _events(service, session_id, "Interaction Escalated")
    assert (event["escalatedTo"], event["rule"]) == (["carol"], "bob, then carol")
    assert event["summary"].startswith("escalated to carol: orchestrator -> db_admin wants to run delete_record")
    with pytest.raises(ForbiddenError, match=r"alice is not one of the approvers .* \(approvers: bob, carol\)"):
        answer(service, started, APPROVE, ALICE)
    assert answer(service, started, APPROVE, CAROL).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_a_question_written_as_before_with_null_attributes_escalates_once_the_same(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    """A question the release before wrote holds ``escalated_at`` as NULL: it escalates as one without."""
    service = ruled(make_service, ESCALATING)
    started = service.start_turn(session_id, PROMPT, OWNER)
    as_written_before(store_of(service), session_id)
    clock.advance(3600 + 1)
    assert service.sweep().escalated == 1
    assert service.sweep().escalated == 0
    assert answer(service, started, APPROVE, CAROL).status == "completed"
    assert executions(ledger) == ["delete prod-db"]


def test_a_turn_the_sweeper_looked_at_before_its_escalation_is_looked_at_again_then(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    """Two questions: answering one makes the turn due a look at once; the sweeper, finding nothing to
    do, sets its next look at the other's escalation (not its expiry, a day later)."""
    service = ruled(make_service, ESCALATING, factory="fan_out")
    started = service.start_turn(session_id, PROMPT, OWNER)
    first, _ = started.interactions
    service.submit_approval(session_id, started.turn_id, first.request_id, APPROVE, BOB)
    assert service.sweep().not_yet == 1

    clock.advance(3600 + 1)

    assert service.sweep().escalated == 1


def test_a_question_settled_before_its_escalation_never_escalates(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = ruled(make_service, {**ESCALATING, "required": 2, "approvers": ["bob", "alice"]})
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, BOB)
    answer(service, started, APPROVE, ALICE)
    clock.advance(7200)
    assert service.sweep().escalated == 0
    assert _events(service, session_id, "Interaction Escalated") == []


def test_a_question_whose_rule_denies_at_expiry_is_denied_and_the_agent_is_told_so(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    rule = {"tools": ["delete_*"], "required": 2, "on_expiry": "deny", "name": "two, or no"}
    service = ruled(make_service, rule, factory=load_factory("resumable.demo_agents:build_demo_agents"))
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)
    clock.advance(service.settings.approval_expiry_seconds + 1)

    service.sweep()

    final = service.get_turn(session_id, started.turn_id)
    [settled] = final.interactions
    said = "nobody settled it before it expired, and the approval rule 'two, or no' then denies it"
    assert (settled.status, settled.response, settled.answered_by) == (
        "answered",
        {"decision": "deny", "message": said},
        "expiry",
    )
    assert [a.by for a in settled.approvals] == ["alice"]
    assert final.status == "completed" and f"DENIED: {said}" in (final.output or "")
    assert executions(ledger) == []
    [denied] = _events(service, session_id, "Interaction Answered")
    assert (denied["answeredBy"], denied["decision"]) == ("expiry", "deny")
    with pytest.raises(GoneError, match="its approval rule denies a question at its expiry: it was denied"):
        answer_again(service, started, settled.request_id, BOB)  # a late answer is too late, not a conflict


def test_an_answer_after_a_deny_on_expiry_question_expired_is_410_saying_it_was_denied(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "on_expiry": "deny"})
    started = service.start_turn(session_id, PROMPT, OWNER)
    clock.advance(service.settings.approval_expiry_seconds + 1)

    with pytest.raises(GoneError, match="its approval rule denies a question at its expiry: it was denied"):
        answer(service, started, APPROVE, ALICE)
    assert service.get_turn(session_id, started.turn_id).status == "completed"
    assert executions(ledger) == []


def test_a_read_that_finds_a_question_its_rule_denies_at_expiry_denies_it_and_asks_for_the_turns_continuation(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, ledger: Path
) -> None:
    requested: list[tuple[str, str]] = []
    service = ruled(make_service, {"tools": ["delete_*"], "on_expiry": "deny"})
    started = service.start_turn(session_id, PROMPT, OWNER)
    clock.advance(service.settings.approval_expiry_seconds + 1)

    read = service.continued_by(lambda s, t: requested.append((s, t))).get_turn(session_id, started.turn_id)

    [denied] = read.interactions
    assert (read.status, denied.answered_by) == ("waiting", "expiry")
    assert requested == [(session_id, started.turn_id)]  # at once, not once it has been idle a while
    assert executions(ledger) == []


def _cancel_died(service: Service, session_id: str, turn_id: str) -> None:
    """A cancel's first write (the tree is to be canceled), and then nothing: it died."""
    store_of(service).dynamodb.update_item(
        TableName=service.settings.table_name,
        Key=key(session_id, root_sk(turn_id)),
        UpdateExpression="SET cancel_requested = :true",
        ExpressionAttributeValues={":true": {"BOOL": True}},
    )


def test_a_turn_whose_cancel_died_before_settling_it_is_settled_at_expiry_never_denied_and_left(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "on_expiry": "deny"})
    started = service.start_turn(session_id, PROMPT, OWNER)
    _cancel_died(service, session_id, started.turn_id)
    clock.advance(service.settings.approval_expiry_seconds + 1)

    service.sweep()

    final = service.get_turn(session_id, started.turn_id)
    assert final.status in ("expired", "canceled"), final
    assert final.interactions[0].answered_by is None


def test_a_turn_being_canceled_escalates_nothing(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    service = ruled(make_service, ESCALATING)
    started = service.start_turn(session_id, PROMPT, OWNER)
    tree = service.store.load_tree(session_id, started.turn_id)
    _cancel_died(service, session_id, started.turn_id)
    clock.advance(3600 + 1)

    assert tree is not None and escalate(service.deps, tree, clock.now()) == 0
    assert _events(service, session_id, "Interaction Escalated") == []


def test_no_vote_is_taken_on_a_turn_being_canceled(make_service: Callable[..., Service], session_id: str) -> None:
    service = ruled(make_service, {"tools": ["delete_*"], "required": 2})
    started = service.start_turn(session_id, PROMPT, OWNER)
    _cancel_died(service, session_id, started.turn_id)

    with pytest.raises(GoneError, match="being canceled"):
        answer(service, started, APPROVE, ALICE)
    assert _interaction_item(service, session_id).get("vote_count") in (None, 0)
