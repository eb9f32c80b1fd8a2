"""Standing grants on the embedded AWS: an approval that also lets the same tool's later calls run
without a question, for a while, in a scope; recorded, listed, revoked, and never over a deny."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, tool
from resumable.exceptions import ConflictError, ForbiddenError, NotFoundError, ValidationFailedError
from resumable.runtime.rules import parse_rules
from resumable.service import AgentContext, Service
from resumable.service.caller import Caller
from resumable.service.views import TurnView
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.factories import LEDGER_ENV, executions
from tests.integration.helpers import APPROVE, session_items, store_of

OWNER = Caller("arn:aws:iam::123456789012:role/agent-runner")
ALICE, BOB, MALLORY = Caller("alice"), Caller("bob"), Caller("mallory")
GRANTING = {"tools": ["delete_*"], "name": "deletes", "approvers": ["alice", "bob"], "grants": {"max": "8h"}}


def granting(make_service: Callable[..., Service], rule: dict[str, Any] = GRANTING) -> Service:
    return make_service("deletes_each_turn", approval_rules=parse_rules([rule]), approver_principals=("alice", "bob"))


def question(view: TurnView) -> Any:
    [asked] = [i for i in view.interactions if i.status == "requested"]
    return asked


def approve(service: Service, view: TurnView, by: Caller, grant: Any = None) -> TurnView:
    return service.submit_approval(view.session_id, view.turn_id, question(view).request_id, APPROVE, by, grant)


def events(service: Service, session_id: str, kind: str) -> list[dict[str, Any]]:
    found = [i for i in session_items(store_of(service), session_id) if i.get("entity") == "event"]
    return [
        json.loads(i["detail"]) if isinstance(i["detail"], str) else i["detail"] for i in found if i["type"] == kind
    ]


def test_a_granted_tool_runs_without_a_question_until_the_grant_is_revoked(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = granting(make_service)
    first = service.start_turn(session_id, "delete orders-1", OWNER)
    assert question(first).rule.grants is not None  # (the card offers it)
    done = approve(service, first, ALICE, {"scope": "session", "for": "1h", "inputs": {"name": "orders-*"}})
    assert done.status == "completed"
    [grant] = service.grants(ALICE).grants
    assert (grant.tool, grant.rule, grant.scope, grant.granted_by, grant.inputs) == (
        "delete_record", "deletes", "session", "alice", {"name": "orders-*"},
    )  # fmt: skip

    # The same tool, an input the grant covers: no question, it runs, and the event and the trail say why.
    second = service.start_turn(session_id, "delete orders-2", OWNER)
    assert second.status == "completed" and second.interactions == []
    assert executions(ledger) == ["delete orders-1", "delete orders-2"]
    [told] = events(service, session_id, "Action Granted")
    assert (told["grantId"], told["grantedBy"], told["rule"], told["tool"]) == (
        grant.grant_id, "alice", "deletes", "delete_record",
    )  # fmt: skip
    trail = service.audit(ALICE).records
    [gave] = [r for r in trail if r.kind == "decision"]
    assert gave.grant is not None and gave.grant["id"] == grant.grant_id
    ran = {r.request_id: r for r in trail if r.kind == "action"}
    asked, granted = ran.pop(gave.request_id), ran.pop(told["requestId"])
    assert ran == {} and (asked.outcome, asked.grant, asked.rule) == ("ran", None, "deletes")
    assert (granted.outcome, granted.rule, granted.started_by) == ("ran", "deletes", OWNER.identity)
    assert granted.grant is not None and (granted.grant["id"], granted.grant["by"], granted.grant["at"]) == (
        grant.grant_id, "alice", grant.granted_at,
    )  # fmt: skip

    # An input it does not cover asks; a deny of that call stands.
    third = service.start_turn(session_id, "delete users-1", OWNER)
    assert third.status == "waiting"
    assert question(third).reason["input"] == {"name": "users-1"}
    denied = service.submit_approval(
        session_id, third.turn_id, question(third).request_id, {"decision": "deny", "message": "no"}, BOB
    )
    assert denied.status == "completed" and "delete users-1" not in executions(ledger)

    # Revoked: the next call it would have covered asks.
    with pytest.raises(ForbiddenError, match="only they or an approver"):
        service.revoke_grant(grant.grant_id, OWNER)
    revoked = service.revoke_grant(grant.grant_id, ALICE)
    assert (revoked.status, revoked.revoked_by) == ("revoked", "alice")
    assert service.grants(ALICE).grants == [] and len(service.grants(ALICE, "all").grants) == 1
    fourth = service.start_turn(session_id, "delete orders-3", OWNER)
    assert fourth.status == "waiting" and "delete orders-3" not in executions(ledger)
    [revoke] = [r for r in service.audit(ALICE).records if r.kind == "grant"]
    assert (revoke.outcome, revoke.by, revoke.request_id) == ("revoked", "alice", grant.request_id)


def test_a_grant_expires_on_its_own(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = granting(make_service)
    first = service.start_turn(session_id, "delete orders-1", OWNER)
    approve(service, first, ALICE, {"for": "30m"})
    clock.advance(1801)
    second = service.start_turn(session_id, "delete orders-2", OWNER)
    assert second.status == "waiting" and executions(ledger) == ["delete orders-1"]
    assert [g.status for g in service.grants(ALICE, "all").grants] == ["expired"]


@pytest.mark.parametrize(
    ("rule", "grant", "refused"),
    [
        ({k: v for k, v in GRANTING.items() if k != "grants"}, {"for": "1h"}, "does not allow grants"),
        (GRANTING, {"for": "9h"}, "at most 28800 s"),
        (GRANTING, {"for": "1h", "scope": "principal"}, "allows grants for session, not 'principal'"),
        (GRANTING, {"for": "forever"}, "grant is not one"),
        (GRANTING, {"for": 1e400}, "grant is not one"),
        (GRANTING, {"for": "1h", "then": "more"}, "grant is not one"),
        ({**GRANTING, "risk": "destructive", "grants": {"max": "8h", "destructive": True}}, {"for": "1h"}, None),
        ({**GRANTING, "impact": "Deletes it"}, {"for": "1h"}, None),
    ],
)
def test_a_grant_the_rule_does_not_allow_is_refused_and_nothing_is_answered(
    make_service: Callable[..., Service], session_id: str, ledger: Path, rule: dict[str, Any], grant: Any,
    refused: str | None,
) -> None:  # fmt: skip
    service = granting(make_service, rule)
    first = service.start_turn(session_id, "delete orders-1", OWNER)
    if refused is None:
        assert approve(service, first, ALICE, grant).status == "completed"
        return
    with pytest.raises(ForbiddenError if "not one" not in refused else ValidationFailedError, match=refused):
        approve(service, first, ALICE, grant)
    assert service.get_turn(session_id, first.turn_id, ALICE).status == "waiting"
    assert executions(ledger) == [] and service.grants(ALICE, "all").grants == []


def test_a_rule_cannot_allow_grants_where_two_must_agree_or_where_every_call_is_destructive() -> None:
    with pytest.raises(ValueError, match="requires 2 approvals cannot allow standing grants"):
        parse_rules([{**GRANTING, "required": 2}])
    with pytest.raises(ValueError, match="destructive, and its grants leave destructive calls out"):
        parse_rules([{**GRANTING, "risk": "destructive"}])


def test_grants_are_seen_by_approvers_and_by_the_sessions_principal_and_revoked_by_no_one_else(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = granting(make_service)
    approve(service, service.start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h"})
    [grant] = service.grants(BOB).grants
    assert [g.grant_id for g in service.grants(OWNER).grants] == [grant.grant_id]
    assert service.grants(MALLORY).grants == []
    with pytest.raises(NotFoundError):
        service.revoke_grant(grant.grant_id, MALLORY)
    with pytest.raises(NotFoundError):
        service.revoke_grant("g" + "0" * 24, BOB)
    assert service.revoke_grant(grant.grant_id, BOB).revoked_by == "bob"  # (an approver)
    assert service.revoke_grant(grant.grant_id, ALICE).revoked_by == "bob"  # (once: as it is)


@pytest.mark.parametrize("revoked", ["just before", "just after"])
def test_a_revoke_applies_to_every_call_whose_journal_entry_begins_after_it_commits(
    make_service: Callable[..., Service], session_id: str, ledger: Path, monkeypatch: pytest.MonkeyPatch, revoked: str
) -> None:
    """The run reads the grant live; the revoke commits between that read and the call's journal entry
    (just before the entry's transaction: the call asks instead, nothing runs), or just after it (the
    call began under the grant: it runs, and only later calls ask)."""
    service = granting(make_service)
    approve(service, service.start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h"})
    [grant] = service.grants(ALICE).grants
    store = store_of(service)
    begin = store.begin_action

    def revoking_around(*args: Any, **kwargs: Any) -> Any:
        if revoked == "just before":
            service.revoke_grant(grant.grant_id, ALICE)
        began = begin(*args, **kwargs)
        if revoked == "just after":
            service.revoke_grant(grant.grant_id, ALICE)
        return began

    monkeypatch.setattr(store, "begin_action", revoking_around)
    second = service.start_turn(session_id, "delete orders-2", OWNER)
    monkeypatch.undo()
    if revoked == "just before":
        assert second.status == "waiting" and question(second).reason["input"] == {"name": "orders-2"}
        assert executions(ledger) == ["delete orders-1"]
        assert events(service, session_id, "Action Granted") == []
        assert [r.kind for r in service.audit(ALICE).records].count("action") == 1
    else:
        assert second.status == "completed" and executions(ledger) == ["delete orders-1", "delete orders-2"]
        assert len(events(service, session_id, "Action Granted")) == 1
        third = service.start_turn(session_id, "delete users-1", OWNER)
        assert third.status == "waiting"


def test_a_per_call_deny_wins_over_a_grant_that_would_cover_the_call(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """Two calls asked at once; one approval grants the tool, the other call is denied: it never runs,
    though the grant covers it (a call asked about is decided by its answer alone)."""
    service = granting(make_service)
    for n in range(1, 5):  # (to the turn whose two calls are asked at once)
        view = service.start_turn(session_id, f"turn {n}", OWNER)
        if view.status == "waiting":
            view = service.submit_approval(session_id, view.turn_id, question(view).request_id, APPROVE, BOB)
    both = service.start_turn(session_id, "delete orders-4 and orders-5", OWNER)
    first, second = [i for i in both.interactions if i.status == "requested"]
    service.submit_approval(
        session_id, both.turn_id, second.request_id, {"decision": "deny", "message": "keep it"}, BOB
    )
    done = service.submit_approval(session_id, both.turn_id, first.request_id, APPROVE, ALICE, {"for": "1h"})
    assert done.status == "completed"
    denied = second.reason["input"]["name"]
    assert f"delete {denied}" not in executions(ledger)
    assert f"delete {first.reason['input']['name']}" in executions(ledger)


def test_a_grant_applies_only_under_the_rule_it_was_given_under_while_that_rule_allows_grants(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = granting(make_service)
    approve(service, service.start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h"})
    strict = granting(make_service, {k: v for k, v in GRANTING.items() if k != "grants"})
    assert strict.start_turn(session_id, "delete orders-2", OWNER).status == "waiting"
    assert executions(ledger) == ["delete orders-1"]


def test_a_principal_grant_covers_that_principals_other_sessions_and_nobody_elses(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = granting(make_service, {**GRANTING, "grants": {"max": "1d", "scopes": ["session", "principal"]}})
    approve(
        service, service.start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h", "scope": "principal"}
    )
    assert service.start_turn(session_id + "-2", "delete orders-1", OWNER).status == "completed"
    other = Caller("arn:aws:iam::123456789012:role/someone-else")
    assert service.start_turn(session_id + "-3", "delete orders-1", other).status == "waiting"
    assert executions(ledger) == ["delete orders-1", "delete orders-1"]


# -- what a grant never covers, and what becomes of a call that began under one ------------------------------


class Crash(BaseException):
    """The process dies here."""


def crashing_janitor(crashes: list[str], *, declared: bool = True) -> Callable[[AgentContext], Agent]:
    """``deletes_each_turn``'s first two turns, whose second call dies after it took effect (once);
    ``declared``: the tool asks for approval itself (else only a rule makes it ask)."""

    @tool(approval=declared)
    def delete_record(name: str) -> str:
        """Delete a database record."""
        with open(os.environ[LEDGER_ENV], "a") as written:
            written.write(f"delete {name}\n")
        if name == "orders-2" and crashes:
            raise Crash(crashes.pop())
        return f"deleted {name}"

    def factory(context: AgentContext) -> Agent:
        script: list[dict[str, Any]] = []
        for n, name in enumerate(["orders-1", "orders-2"], 1):
            script += [calls((f"d-{n}", "delete_record", {"name": name})), says(f"{name} is deleted")]
        return Agent(name="janitor", model=ScriptedModel(script), tools=[delete_record])

    return factory


@pytest.mark.parametrize("lapsed", ["revoked", "expired", "held"])
def test_a_granted_call_that_took_effect_before_a_crash_is_never_asked_about_again(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock, lapsed: str
) -> None:
    """The run dies after the granted call took effect; whatever became of the grant since, the takeover
    finds the call's journal entry and tells the model its outcome is unknown (never a new question, whose
    deny would tell it the call did not run), and the trail names the grant."""
    factory = crashing_janitor(["died after the granted action took effect"])

    def process() -> Service:
        return make_service(factory, approval_rules=parse_rules([GRANTING]), approver_principals=("alice", "bob"))

    first = process().start_turn(session_id, "delete orders-1", OWNER)
    approve(process(), first, ALICE, {"for": "1h"})
    [grant] = process().grants(ALICE).grants
    with pytest.raises(Crash):
        process().start_turn(session_id, "delete orders-2", OWNER)
    if lapsed == "revoked":
        process().revoke_grant(grant.grant_id, ALICE)
    clock.advance(process().settings.lease_seconds + (3600 if lapsed == "expired" else 1))
    assert process().sweep().looked == 1
    unknown = [r for r in process().audit(ALICE).records if r.kind == "action" and r.outcome == "unknown"]
    assert len(unknown) == 1 and unknown[0].rule == "deletes"
    assert unknown[0].grant is not None and (unknown[0].grant["id"], unknown[0].grant["by"]) == (
        grant.grant_id,
        "alice",
    )
    assert executions(ledger) == ["delete orders-1", "delete orders-2"]
    asked = {r.request_id for r in process().audit(ALICE).records if r.kind == "decision"}
    assert asked == {question(first).request_id}  # (no question was asked about the call that ran)


def test_a_principal_grant_covers_no_principal_whose_name_its_key_begins_with(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """A grant in a session of ``victim#evil`` is keyed under a prefix ``victim``'s begins with; it covers
    only ``victim#evil``'s sessions."""
    service = granting(make_service, {**GRANTING, "grants": {"max": "1d", "scopes": ["session", "principal"]}})
    evil, victim = Caller("victim#evil"), Caller("victim")
    approve(
        service, service.start_turn(session_id, "delete orders-1", evil), ALICE, {"for": "1h", "scope": "principal"}
    )
    assert service.start_turn(session_id + "-v", "delete orders-1", victim).status == "waiting"
    assert service.start_turn(session_id + "-e", "delete orders-1", evil).status == "completed"


def test_narrowing_the_rule_narrows_the_grants_given_under_it(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    wide = granting(make_service, {**GRANTING, "grants": {"max": "2d", "scopes": ["session", "principal"]}})
    first = wide.start_turn(session_id, "delete orders-1", OWNER)
    approve(wide, first, ALICE, {"for": "2d", "scope": "principal"})
    session_only = granting(make_service, {**GRANTING, "grants": {"max": "2d", "scopes": ["session"]}})
    assert session_only.start_turn(session_id + "-2", "delete orders-1", OWNER).status == "waiting"
    shorter = granting(make_service, {**GRANTING, "grants": {"max": "1h", "scopes": ["session", "principal"]}})
    clock.advance(3601)
    assert shorter.start_turn(session_id + "-3", "delete orders-1", OWNER).status == "waiting"
    assert wide.start_turn(session_id + "-4", "delete orders-1", OWNER).status == "completed"


def test_a_grant_covers_neither_another_tool_under_its_rule_nor_a_destructive_one_the_rule_no_longer_allows(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    @tool(approval=True)
    def delete_table(name: str) -> str:
        """Delete a table."""
        return f"dropped {name}"

    @tool(approval=True, risk="destructive")
    def delete_record(name: str) -> str:
        """Delete a record."""
        with open(os.environ[LEDGER_ENV], "a") as written:
            written.write(f"delete {name}\n")
        return f"deleted {name}"

    def factory(context: AgentContext) -> Agent:
        script = [calls(("d-1", "delete_record", {"name": "orders-1"})), says("done")]
        script += [calls(("d-2", "delete_table", {"name": "orders"})), says("done")]
        script += [calls(("d-3", "delete_record", {"name": "orders-2"})), says("done")]
        return Agent(name="janitor", model=ScriptedModel(script), tools=[delete_record, delete_table])

    def process(destructive: bool) -> Service:
        rule = {**GRANTING, "grants": {"max": "8h", "destructive": destructive}}
        return make_service(factory, approval_rules=parse_rules([rule]), approver_principals=("alice", "bob"))

    approve(process(True), process(True).start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h"})
    table = process(True).start_turn(session_id, "delete the orders table", OWNER)
    assert table.status == "waiting" and question(table).reason["tool"] == "delete_table"
    process(True).submit_approval(session_id, table.turn_id, question(table).request_id, APPROVE, BOB)
    again = process(False).start_turn(session_id, "delete orders-2", OWNER)  # (redeployed: no destructive grants)
    assert again.status == "waiting" and executions(ledger) == ["delete orders-1"]


def test_a_sub_agent_call_is_never_granted_but_its_own_tools_calls_are(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """(``nested_twice``: an orchestrator asks db_admin, a sub-agent, to delete prod-db, twice.)"""
    rule = {"tools": ["db_admin", "delete_*"], "name": "admins", "grants": {"max": "8h"}}
    service = make_service("nested_twice", approval_rules=parse_rules([rule]), approver_principals=("alice",))
    first = service.start_turn(session_id, "delete prod-db", OWNER)
    assert question(first).reason["tool"] == "db_admin"
    inner = approve(service, first, ALICE, {"for": "1h"})  # (the sub-agent call: no journal entry, so no grant)
    assert question(inner).reason["tool"] == "delete_record"
    assert approve(service, inner, ALICE, {"for": "1h"}).status == "completed"
    second = service.start_turn(session_id, "delete prod-db again", OWNER)
    assert question(second).reason["tool"] == "db_admin"  # (asked: the sub-agent call's grant applies to none)
    assert approve(service, second, ALICE).status == "completed"  # (its delete_record: granted)
    assert executions(ledger) == ["delete prod-db", "delete prod-db"]


def test_a_refused_grant_leaves_the_question_unanswered_and_nothing_on_the_trail(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    anywhere = granting(make_service, {**GRANTING, "grants": {"max": "1d", "scopes": ["session", "principal"]}})
    theirs = anywhere.start_turn(session_id + "-app", "delete orders-1")  # (the application's: no principal)
    with pytest.raises(ForbiddenError, match="no principal started"):
        approve(anywhere, theirs, ALICE, {"for": "1h", "scope": "principal"})
    service = granting(make_service)
    first = service.start_turn(session_id, "delete orders-1", OWNER)
    for refused in ({"for": "9h"}, {"for": "1h", "scope": "principal"}):
        with pytest.raises(ForbiddenError):
            approve(service, first, ALICE, refused)
    with pytest.raises(ForbiddenError, match="a grant goes with an approval"):
        service.submit_approval(
            session_id, first.turn_id, question(first).request_id, {"decision": "deny"}, ALICE, {"for": "1h"}
        )
    assert service.audit(ALICE).records == [] and question(service.get_turn(session_id, first.turn_id, ALICE))
    assert service.grants(ALICE, "all").grants == [] and executions(ledger) == []


def test_an_approval_sent_again_with_another_grant_says_the_first_stands(
    make_service: Callable[..., Service], session_id: str
) -> None:
    service = granting(make_service)
    first = service.start_turn(session_id, "delete orders-1", OWNER)
    request = question(first).request_id
    service.submit_approval(session_id, first.turn_id, request, APPROVE, ALICE, {"for": "1h"})
    assert (
        service.submit_approval(session_id, first.turn_id, request, APPROVE, ALICE, {"for": "1h"}).status == "completed"
    )
    for other in ({"for": "2h"}, {"for": "1h", "inputs": {"name": "x"}}):
        with pytest.raises(ConflictError, match=r"approved before with the grant g[0-9a-f]{24} \(session, 1 h\)"):
            service.submit_approval(session_id, first.turn_id, request, APPROVE, ALICE, other)
