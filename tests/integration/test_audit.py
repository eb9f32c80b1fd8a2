"""The audit trail on the embedded AWS: every vote, decision and approved action's outcome leaves one
record, written in the transaction of what it records; records outlive their session and show its
inputs only as the deployment says; GET /audit pages them by time and filters them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable import Agent, ScriptedModel, tool
from resumable.api.app import build_app
from resumable.exceptions import ActionOutcomeUnknownError, ConflictError, ForbiddenError, ValidationFailedError
from resumable.runtime.rules import parse_rules
from resumable.service import AgentContext, Service
from resumable.service.access import load
from resumable.service.answering.votes import answer_under_rule
from resumable.service.audit import trail as audit_trail
from resumable.service.audit.entries import action_entry
from resumable.service.audit.trail import AuditPage, AuditRecordView
from resumable.service.caller import Caller
from resumable.service.views import TurnView
from resumable.store.audit import audit_put
from resumable.store.codec import key, root_sk
from resumable.store.records import ActionRecord
from tests.agents import calls, says
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import ACCESS_KEY, APPROVE, at_once, http, store_of

OWNER = Caller("arn:aws:iam::123456789012:role/agent-runner", (), {"method": "iam", "arn": "owner"})
ALICE = Caller("alice", (), {"method": "iam", "arn": "arn:aws:iam::123456789012:user/alice", "accessKey": "AKIA1"})
BOB = Caller("bob", ("dba",), {"method": "jwt", "subject": "bob", "issuer": "https://id.example.com"})
MALLORY = Caller("mallory", (), {"method": "jwt", "subject": "mallory", "issuer": "https://id.example.com"})
PROMPT = "delete the prod-db record"
ASKED = {"name": "prod-db"}
DAY = 86400
SINCE = "2027-01-01"  # (the fake clock starts on 2027-01-15)
RULE = "two-person delete"


def digest(value: Any) -> str:
    """What an auditor computes (docs/audit.md): SHA-256 of the canonical JSON."""
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def audited(
    make_service: Callable[..., Service], *rules: dict[str, Any], factory: Any = "nested", **settings: Any
) -> Service:
    return make_service(
        factory,
        approval_rules=parse_rules(list(rules)) if rules else (),
        approver_principals=("alice", "bob", "carol"),
        **settings,
    )


def request_of(view: TurnView) -> str:
    [interaction] = [i for i in view.interactions if i.status == "requested"]
    return interaction.request_id


def answer(service: Service, view: TurnView, response: dict[str, Any], principal: str) -> TurnView:
    return service.submit_approval(view.session_id, view.turn_id, request_of(view), response, principal)


def trail(service: Service, **query: Any) -> list[AuditRecordView]:
    """Every record the query finds, following the cursor to the end."""
    found: list[AuditRecordView] = []
    page: AuditPage | None = None
    while page is None or page.cursor is not None:
        page = service.audit(None, **query, after=page.cursor if page else None)
        found += page.records
    return found


@pytest.mark.parametrize("factory", ["nested", "strands:nested"])
def test_a_two_person_approval_leaves_each_vote_the_decision_and_the_actions_outcome(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock, factory: str
) -> None:
    rule = {"tools": ["delete_*"], "required": 2, "name": RULE}
    service = audited(make_service, rule, factory=factory)
    started = service.start_turn(session_id, PROMPT, OWNER)
    question = request_of(started)
    clock.advance(60)
    answer(service, started, {"decision": "approve", "message": "checked the backup"}, ALICE)
    assert [e.kind for e in trail(service)] == ["vote"]
    for _ in range(3):  # refused: nothing happens but the trail's record of it, once (a flood is one record a day)
        with pytest.raises(ConflictError):  # (alice's own vote again: it counted, so it is no refusal to record)
            answer(service, started, APPROVE, ALICE)
        with pytest.raises(ForbiddenError):  # the one who started the turn may not approve it
            answer(service, started, APPROVE, OWNER)
        clock.advance(1)  # (each press a record of its own, but for the day's mark)
    [own] = [e for e in trail(service) if e.kind == "refused"]
    assert (own.by, own.refusal, own.started_by, own.rule) == (OWNER.identity, "self_approval", OWNER.identity, RULE)
    assert own.message == "they started the turn, and its approval rule does not let them approve their own call"
    assert own.authentication == OWNER.authentication and own.input_approved_digest == digest(ASKED)
    assert own.outcome == "refused"
    clock.advance(60)
    done = answer(service, started, APPROVE, BOB)
    assert done.status == "completed" and executions(ledger) == ["delete prod-db"]
    with pytest.raises(ConflictError):  # her vote sent again once it settled: it counted, no refusal
        answer(service, started, {"decision": "approve", "message": "checked the backup"}, ALICE)
    assert len(trail(service, outcome="refused")) == 1
    with pytest.raises(ConflictError):  # a different answer after it settled: refused, and recorded as such
        answer(service, started, {"decision": "deny"}, ALICE)
    assert [(e.by, e.refusal) for e in trail(service, outcome="refused")][-1] == ("alice", "after_settlement")

    vote, decision, action = [e for e in trail(service) if e.kind != "refused"]
    assert {e.started_by for e in (vote, decision, action)} == {OWNER.identity}, "each names who started the turn"
    assert {e.request_id for e in (vote, decision, action)} == {question}
    assert {e.session_id for e in (vote, decision, action)} == {session_id}
    assert {e.root_turn_id for e in (vote, decision, action)} == {started.turn_id}
    assert (vote.kind, vote.outcome, vote.by, vote.message) == ("vote", "voted", "alice", "checked the backup")
    assert vote.authentication == ALICE.authentication
    assert (vote.tool, vote.rule, vote.agent_path) == (
        "delete_record",
        "two-person delete",
        ["orchestrator", "db_admin"],
    )

    assert (decision.kind, decision.outcome, decision.by) == ("decision", "approved", "bob")
    assert decision.authentication == {"method": "jwt", "subject": "bob", "issuer": "https://id.example.com"}
    assert [(v.by, v.authentication, v.message) for v in decision.votes] == [
        ("alice", ALICE.authentication, "checked the backup"),
        ("bob", BOB.authentication, None),
    ]
    assert decision.at > vote.at
    for record in (vote, decision):
        assert record.input_asked_digest == digest(ASKED) == record.input_approved_digest
        assert (record.inputs, record.input_asked, record.input_approved) == ("session", ASKED, ASKED)

    assert (action.kind, action.outcome, action.tool) == ("action", "ran", "delete_record")
    assert action.rule == "two-person delete"  # (its approval's rule: a filter by rule finds all three)
    assert action.input_approved_digest == digest(ASKED)  # the input it ran with
    assert action.turn_id == decision.turn_id != started.turn_id  # the child turn that asked
    # alice's record: her vote, and the decision her vote counted in (bob answered it)
    alices = [(r.kind, r.by) for r in trail(service, by="alice") if r.kind != "refused"]
    assert alices == [("vote", "alice"), ("decision", "bob")]


def test_a_deny_records_its_message_and_who_denied_and_an_edit_the_input_approved(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = audited(make_service)
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, {"decision": "deny", "message": "not prod"}, BOB)
    [denied] = trail(service)
    assert (denied.kind, denied.outcome, denied.by, denied.message) == ("decision", "denied", "bob", "not prod")
    assert denied.authentication == BOB.authentication
    assert (denied.input_asked_digest, denied.input_approved_digest) == (digest(ASKED), None)

    editable = audited(make_service, factory="nested_editable")
    again = editable.start_turn(session_id + "-2", PROMPT, OWNER)
    answer(editable, again, {"decision": "approve", "input": {"name": "prod-db-replica"}}, None)  # the application
    decision, action = [e for e in trail(editable) if e.session_id == again.session_id]
    assert (decision.by, decision.authentication) == ("application", {"method": "application"})
    assert decision.input_asked_digest == digest(ASKED)
    assert decision.input_approved_digest == digest({"name": "prod-db-replica"}) == action.input_approved_digest
    assert decision.input_approved == {"name": "prod-db-replica"}


@pytest.mark.parametrize("mode", ["session", "keep", "digest"])
def test_records_outlive_their_session_and_show_its_inputs_only_as_the_deployment_says(
    make_service: Callable[..., Service], session_id: str, ledger: Path, mode: str
) -> None:
    service = audited(make_service, audit_inputs=mode)
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)
    shown = {"session": ("session", ASKED), "keep": ("kept", ASKED), "digest": ("digest", None)}[mode]
    assert [(e.inputs, e.input_approved) for e in trail(service)] == [shown, shown]
    decision, action = trail(service)
    assert (decision.input_asked, action.input_asked) == (shown[1], None)  # an action's is the input it ran with

    service.delete_session(session_id, OWNER)
    after = trail(service)
    assert [(e.kind, e.outcome, e.by) for e in after] == [("decision", "approved", "alice"), ("action", "ran", None)]
    assert after[0].input_asked_digest == digest(ASKED)  # who, when and what was decided stay
    gone = {"session": ("digest", None), "keep": ("kept", ASKED), "digest": ("digest", None)}[mode]
    assert [(e.inputs, e.input_approved) for e in after] == [gone, gone]

    service.restore_session(session_id, OWNER)
    assert [(e.inputs, e.input_approved) for e in trail(service)] == [shown, shown]


def test_an_entry_keeps_its_own_retention_and_nothing_overwrites_one(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = audited(make_service, audit_retention_days=400, retention_days=1)
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)
    records = trail(service)
    assert len(records) == 2

    # Past the session's retention (1 day), its records stay, with digests only.
    clock.advance(30 * DAY)
    later = trail(service, since=SINCE)
    assert [(e.kind, e.inputs) for e in later] == [("decision", "digest"), ("action", "digest")]
    # Past their own (400 days), they are gone for every reader (DynamoDB's TTL deletes them). (Read over
    # the days they were written on: a year of empty days is a year of Queries of every shard.)
    clock.advance(371 * DAY)
    assert trail(service, since=SINCE, until="2027-02-01") == []

    # A record's put refuses a key that holds one: a record is never overwritten.
    [stored] = [r for _, r in store_of(service).list_audit(_day(clock.now() - 401 * DAY), None, 0, 4e9, 10)[0]][:1]
    forged = stored.model_copy(update={"message": "approved by nobody"})  # (its key unchanged)
    with pytest.raises(Exception, match="ConditionalCheckFailed"):
        store_of(service).dynamodb.transact_write_items(
            TransactItems=[audit_put(service.settings.table_name, forged, service.settings.index_shards)]
        )


def _day(at: float) -> str:
    from resumable.store.audit import audit_day

    return audit_day(at)


def test_under_fifty_concurrent_votes_the_trail_holds_each_counted_vote_once_and_one_decision(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    voters = [Caller(f"erin-{n}", (), {"method": "iam", "arn": f"erin-{n}"}) for n in range(10)]
    service = make_service(
        "nested",
        approval_rules=parse_rules([{"tools": ["delete_record"], "required": 3}]),
        approver_principals=("erin-*",),
    )
    started = service.start_turn(session_id, PROMPT, OWNER)
    at_once([lambda p=voters[n % 10]: answer(service, started, APPROVE, p) for n in range(50)])
    assert executions(ledger) == ["delete prod-db"]
    records = trail(service)
    kinds = [e.kind for e in records]
    assert kinds.count("decision") == 1 and kinds.count("action") == 1 and kinds.count("vote") == 2
    [decision] = [e for e in records if e.kind == "decision"]
    assert len({v.by for v in decision.votes}) == 3
    assert {e.by for e in records if e.kind == "vote"} < {v.by for v in decision.votes}


def test_what_became_of_an_action_that_failed_or_whose_outcome_is_unknown(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    for outcome, raised in [("failed", RuntimeError("disk full")), ("unknown", ActionOutcomeUnknownError("timeout"))]:

        @tool(approval=True)
        def delete_record(name: str) -> str:
            """Delete a database record."""
            raise raised  # noqa: B023 (each service is done with before the loop goes on)

        def factory(context: AgentContext) -> Agent:
            return Agent(
                name="db_admin",
                model=ScriptedModel([calls(("w-1", "delete_record", ASKED)), says("done")]),
                tools=[delete_record],
            )

        service = audited(make_service, factory=factory)
        started = service.start_turn(f"{session_id}-{outcome}", PROMPT, OWNER)
        answer(service, started, APPROVE, ALICE)
        decision, action = [e for e in trail(service) if e.session_id == started.session_id]
        assert (decision.outcome, action.kind, action.outcome) == ("approved", "action", outcome)
        assert action.request_id == decision.request_id


def test_a_question_an_approval_rule_denies_at_its_expiry_is_recorded_denied_by_expiry(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = audited(make_service, {"tools": ["delete_record"], "required": 2, "on_expiry": "deny"})
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)
    clock.advance(service.settings.approval_expiry_seconds + 1)
    service.sweep()
    vote, decision = trail(service)
    assert (vote.by, decision.outcome, decision.by, decision.authentication) == (
        "alice",
        "denied",
        "expiry",
        {"method": "expiry"},
    )
    assert [v.by for v in decision.votes] == ["alice"]  # the approvals it had when it expired


def test_the_trail_is_read_by_time_principal_tool_and_outcome_a_page_at_a_time(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = audited(make_service)
    for n, (who, response) in enumerate([(ALICE, APPROVE), (BOB, {"decision": "deny"}), (ALICE, APPROVE)]):
        started = service.start_turn(f"{session_id}-{n}", PROMPT, OWNER)
        answer(service, started, response, who)
        clock.advance(2 * DAY)  # a day's partition apart
    everything = trail(service, since=SINCE, limit=1)
    approved, ran = ("decision", "approved"), ("action", "ran")
    assert [(e.kind, e.outcome) for e in everything] == [approved, ran, ("decision", "denied"), approved, ran]
    assert [e.at for e in everything] == sorted(e.at for e in everything)
    assert trail(service, since=SINCE, limit=2) == everything
    assert [e.outcome for e in trail(service, since=SINCE, by="bob")] == ["denied"]
    assert len(trail(service, since=SINCE, by="alice", outcome="approved")) == 2
    assert [(e.kind, e.by) for e in trail(service, since=SINCE, outcome="ran")] == [("action", None)] * 2
    assert len(trail(service, since=SINCE, tool="delete_*")) == 5  # (an action has its tool too)
    assert trail(service, since=SINCE, tool="drop_*") == []
    first = everything[0].at
    assert len(trail(service, since=first[:10], until=everything[2].at)) == 2  # until is exclusive
    clock.advance(3 * DAY)  # now 9 days after the first: the last 7 days hold the third question's
    assert [(r.kind, r.session_id) for r in trail(service)] == [
        ("decision", f"{session_id}-2"),
        ("action", f"{session_id}-2"),
    ]

    page = service.audit(None, since=SINCE, limit=1)
    assert page.cursor is not None
    with pytest.raises(ValidationFailedError, match="cursor"):
        service.audit(None, since=SINCE, by="bob", after=page.cursor)
    with pytest.raises(ValidationFailedError, match="cursor"):
        service.audit(None, since="2027-01-02", after=page.cursor)
    with pytest.raises(ValidationFailedError, match="cursor"):
        service.audit(None, after=page.cursor[:-2] + "xx")
    for bad in [{"since": "yesterday"}, {"since": "2026-02-01", "until": "2026-01-01"}, {"outcome": "maybe"}]:
        with pytest.raises(ValidationFailedError):
            service.audit(None, **bad)
    with pytest.raises(ForbiddenError, match="approvers only"):
        service.audit(MALLORY)
    assert service.audit(ALICE, since=SINCE).records == everything[:5]


@pytest.mark.parametrize("mode", ["session", "keep"])
def test_an_input_too_large_to_show_is_recorded_as_shown_and_by_the_digest_of_what_ran(
    make_service: Callable[..., Service], session_id: str, ledger: Path, mode: str
) -> None:
    # The question shows a preview of a call's input too large to show whole; the action runs with all of it.
    service = audited(make_service, factory="oversized", audit_inputs=mode)
    started = service.start_turn(session_id, "delete them all", OWNER)
    answer(service, started, APPROVE, ALICE)
    decision, action = trail(service)
    assert (decision.tool, action.tool) == ("bulk_delete", "bulk_delete")  # what the call is, whole
    preview = decision.input_asked
    assert isinstance(preview, dict) and preview["truncated"] is True
    assert decision.input_asked_digest == digest(preview)  # what the approvers were shown
    assert decision.input_approved_digest is None  # (the whole input is not known where it was approved)
    whole = {"names": [f"db-{n:06d}" for n in range(40_000)]}
    assert action.input_approved_digest == digest(whole)
    # Not shown: the question holds only a preview of it, and a record keeps none this large.
    assert (action.input_approved, action.inputs) == (None, "digest")
    assert len(trail(service, tool="bulk_*")) == 2


def test_get_audit_shows_how_each_answerer_was_authenticated_and_is_for_approvers_only(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    # (a retention of 60 days: reading the whole of it, a day a Query of each of its 16 shards, is 3 pages)
    api = build_app(
        audited(make_service, {"tools": ["delete_record"], "required": 2}, audit_retention_days=60, index_shards=16)
    )
    status, started = http(api, "POST", f"/sessions/{session_id}/turns", {"prompt": PROMPT}, principal=OWNER.identity)
    assert status == 201
    [asked] = started["interactions"]
    path = f"/sessions/{session_id}/turns/{started['turnId']}/interactions/{asked['requestId']}"
    assert http(api, "POST", path, {"response": APPROVE}, principal="alice")[0] == 200
    signed_in = {"sub": "bob", "iss": "https://id.example.com", "cognito:groups": "[dba]"}
    assert http(api, "POST", path, {"response": APPROVE}, claims=signed_in)[0] == 200

    status, page = http(api, "GET", "/audit", query="outcome=approved", principal="carol")
    assert status == 200 and page["cursor"] is None
    [decision] = page["records"]
    assert (decision["by"], decision["requestId"], decision["inputAsked"]) == ("bob", asked["requestId"], ASKED)
    assert [(v["by"], v["authentication"]) for v in decision["votes"]] == [
        ("alice", {"method": "iam", "arn": "alice", "accessKey": ACCESS_KEY}),
        ("bob", {"method": "jwt", "subject": "bob", "issuer": "https://id.example.com"}),
    ]
    status, mine = http(api, "GET", "/audit", query="principal=alice&outcome=voted", principal="carol")
    assert [(e["kind"], e["by"]) for e in mine["records"]] == [("vote", "alice")]

    status, refused = http(api, "GET", "/audit", principal=OWNER.identity)  # not an approver
    assert (status, refused["code"]) == (403, "forbidden") and "approvers only" in refused["message"]
    for query in ["since=last+week", "outcome=maybe", "limit=0", "cursor=forged", "since=2027-02-01&until=2027-01-01"]:
        status, bad = http(api, "GET", "/audit", query=query, principal="carol")
        assert status == 422, (query, bad)
    # Any range, however old or far ahead: what it holds, read from the oldest day a record could be.
    for query in [
        "since=0001-01-01",
        "since=0999-12-31",
        "since=0001-01-01T00:00:00+05:00",  # (before year 1 in UTC)
        "since=1970-01-01&until=2999-01-01",
        "until=9999-12-31T23:00:00-05:00",  # (after year 9999 in UTC)
        "until=0999-12-25",
    ]:
        found: list[Any] = []
        sent = query
        for _ in range(5):  # (a page passes 25 empty days at 16 shards: this retention is 3 pages)
            status, page = http(api, "GET", "/audit", query=sent, principal="carol")
            assert status == 200, (query, page)
            found += page["records"]
            if page["cursor"] is None:
                break
            sent = f"cursor={page['cursor']}"
        assert page["cursor"] is None and len(found) == (0 if query.startswith("until") else 3), query


def test_a_page_over_days_that_hold_nothing_stops_after_a_bounded_number_of_queries_and_its_cursor_goes_on(
    make_service: Callable[..., Service],
) -> None:
    service = audited(make_service, audit_retention_days=120, index_shards=16)  # (the default's, counted)
    queries: list[str] = []
    service.deps.store.dynamodb.meta.events.register(  # type: ignore[attr-defined]
        "before-call.dynamodb.Query", lambda **_: queries.append("Query")
    )
    pages, after = 0, None
    while True:
        queries.clear()
        page = service.audit("carol", since="2000-01-01", after=after)
        pages += 1
        assert page.records == [] and len(queries) <= 400, len(queries)
        if page.cursor is None:
            break
        after = page.cursor
    assert pages == 5  # 121 days, 25 a page (a Query of each of 16 shards a day)


def test_a_deny_under_a_rule_records_every_approval_it_overrode_even_one_given_as_it_was_written(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = audited(make_service, {"tools": ["delete_record"], "required": 3})
    started = service.start_turn(session_id, PROMPT, OWNER)
    answer(service, started, APPROVE, ALICE)
    [seen] = [i for i in load(service.deps, session_id, started.turn_id).interactions]  # bob reads: 1 vote
    clock.advance(1)
    answer(service, started, APPROVE, Caller("carol", (), {"method": "iam", "arn": "carol"}))  # meanwhile
    clock.advance(1)
    denial = {"decision": "deny", "message": "no"}
    outcome = answer_under_rule(service.deps, seen, denial, BOB, child_turn_id=seen.turn_id)
    assert outcome.outcome == "answered" and executions(ledger) == []
    decision = [r for r in trail(service) if r.kind == "decision"]
    assert [(r.outcome, r.by, [v.by for v in r.votes]) for r in decision] == [("denied", "bob", ["alice", "carol"])]


def test_an_outcome_found_unknown_twice_is_recorded_once(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    service = audited(make_service)
    store = store_of(service)
    started = service.start_turn(session_id, PROMPT, OWNER)
    action = ActionRecord(
        key="k", status="started", turn_id=started.turn_id, tool="delete_record", started_at=clock.now()
    )
    root = store.load_tree(session_id, started.turn_id)
    assert root is not None
    store.dynamodb.update_item(  # (a runner holds the turn, as begin_action needs)
        TableName=service.settings.table_name,
        Key=key(session_id, root_sk(started.turn_id)),
        UpdateExpression="SET #status = :running, lease_owner = :owner",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":running": {"S": "running"}, ":owner": {"S": "runner"}},
    )
    assert store.begin_action(session_id, started.turn_id, action, "runner", clock.now() + 60) is None
    for _ in range(2):  # two takeovers each find it started and never finished
        clock.advance(1)
        entry = action_entry(service.deps, started.turn_id, session_id, action, "unknown", clock.now(), ASKED)
        store.mark_action_unknown(session_id, started.turn_id, "k", clock.now(), entry)
    assert [(r.kind, r.outcome) for r in trail(service)] == [("action", "unknown")]


def test_a_page_of_large_records_stops_short_of_lambdas_reply_limit_and_the_next_goes_on(
    make_service: Callable[..., Service], session_id: str, ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = audited(make_service, audit_inputs="keep")
    for n in range(4):
        answer(service, service.start_turn(f"{session_id}-{n}", PROMPT, OWNER), APPROVE, ALICE)
    everything = trail(service)
    assert len(everything) == 8
    one = len(everything[0].model_dump_json(by_alias=True))
    monkeypatch.setattr(audit_trail, "MAX_PAGE_BYTES", 3 * one)  # (4 MB of records: 3 of these)
    first = service.audit(None, limit=500)
    assert len(first.records) == 3 and first.cursor is not None
    assert trail(service, limit=500) == everything  # page after page: each record once, in order


def test_refused_attempts_from_many_principals_are_kept_to_twenty_a_day(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    """Principals are cheap (an assumed role's session name is the caller's choice): however many try, a
    question's refused records are 20 a UTC day, and the next day's count starts again."""
    rule = {"tools": ["delete_*"], "approvers": ["bob"], "name": "bob alone"}
    service = make_service(
        "nested", approval_rules=parse_rules([rule]), approver_principals=("arn:aws:sts::1:assumed-role/ops/*",)
    )
    started = service.start_turn(session_id, PROMPT, OWNER)
    for day in range(2):
        for n in range(25):
            with pytest.raises(ForbiddenError, match="is not one of the approvers"):
                answer(service, started, APPROVE, Caller(f"arn:aws:sts::1:assumed-role/ops/session-{day}-{n}"))
        clock.advance(DAY)
    refused = trail(service, outcome="refused")
    assert len(refused) == 40 and {e.refusal for e in refused} == {"not_an_approver"}, len(refused)
    assert len({e.by for e in refused}) == 40  # (each a principal of its own: the first 20 of each day)
