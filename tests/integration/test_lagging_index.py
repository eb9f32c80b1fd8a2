"""What reads an index, or reads without ``ConsistentRead``, and what it may act on while the index
lags (the embedded AWS's lag, resumable.local.lag): each path that once took a lagging read for the
table as it is has a test here that fails with the lag on and its fix taken out."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from resumable.config import Settings
from resumable.exceptions import ConflictError, ForbiddenError, GoneError, NotFoundError, TurnBusyError
from resumable.local.lag import lagging
from resumable.runtime.rules import parse_rules
from resumable.service import Service, TurnView
from resumable.service.operating.sweep import STUCK_RECHECK_SECONDS
from resumable.store import DynamoDBStore
from resumable.store.codec import key, root_sk
from resumable.store.resources import create_table_request
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import APPROVE
from tests.integration.test_unloadable_snapshot import swept_to_the_brink
from tests.metrics import forget_metrics, printed_metrics

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
    started, breakage = swept_to_the_brink(make_service, session_id, clock, aws)
    with lagging(BEHIND, least=BEHIND):  # (the index shows neither the giving up nor, later, the turn's move)
        gave_up = make_service().sweep()
        assert (gave_up.given_up, gave_up.stuck) == (1, 1)
    breakage.repair()
    clock.advance(STUCK_RECHECK_SECONDS)
    with lagging(BEHIND, least=BEHIND):
        tried_again = make_service().sweep()
        assert (dict(tried_again.moved), tried_again.stuck) == ({"answered_unresumed": 1}, 0)
    assert make_service().get_turn(session_id, started.turn_id).status == "completed"


def test_the_sweeper_reads_each_turn_its_index_lists_again_and_passes_by_one_put_off_since(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock, store: DynamoDBStore
) -> None:
    """The sweeper's index holds keys only, and lags its table: a turn it lists as due is read again,
    as the table holds it now; one whose next look was put off since is not due, though still listed."""
    make_service().start_turn(session_id, PROMPT)
    later = clock.now() + 10**8  # (past any look the waiting turn is due)
    [found] = store.due_turns(later, 10)
    with lagging(BEHIND, least=BEHIND):
        store.dynamodb.update_item(
            TableName=store.table,
            Key=key(session_id, root_sk(found.root.turn_id)),
            UpdateExpression="SET cancel_requested = :true",
            ExpressionAttributeValues={":true": {"BOOL": True}},
        )
        [again] = store.due_turns(later, 10)
        assert again.root.cancel_requested and (again.due_at, again.partition) == (found.due_at, found.partition)
        assert store.reschedule(again, later + 1)
        assert store.due_turns(later, 10) == [], "its next look was put off: not due now"
        [put_off] = store.due_turns(later + 1, 10)
        assert put_off.due_at == later + 1
        assert store.reschedule(put_off, later, stuck=True)  # given up on: due as soon, in another partition
        assert store.due_turns(later, 10) == [], "it left the partition: not one of its due turns"
    [stuck] = store.due_turns(later, 10, stuck=True)  # (once the index shows where it is now)
    assert (stuck.stuck, stuck.due_at) == (True, later)


def test_a_sweep_that_cannot_count_the_stuck_turns_keeps_its_moves_and_leaves_the_metric_out(
    make_service: Callable[..., Service],
    session_id: str,
    clock: FakeClock,
    aws: Settings,
    counting: None,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    swept_to_the_brink(make_service, session_id, clock, aws)
    sweeper = make_service()

    slow_down = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}

    def throttled(params: dict[str, Any], **_: Any) -> None:
        # (the count's read of the stuck turns, which asks for their place in the index alone; the read
        # of the turns found due goes through)
        if any(asked.get("ProjectionExpression") == "gsi4pk" for asked in params["RequestItems"].values()):
            raise ClientError(slow_down, "BatchGetItem")

    sweeper.store.dynamodb.meta.events.register("before-parameter-build.dynamodb.BatchGetItem", throttled)  # type: ignore[attr-defined]
    forget_metrics(capsys)
    gave_up = sweeper.sweep()
    assert gave_up.given_up == 1, "the run's moves stand"
    metrics = printed_metrics(capsys)
    assert "StuckTurns" not in metrics and "SweeperFinds" not in metrics, metrics
    assert "could not count the stuck turns" in caplog.text


def test_a_deleted_sessions_question_an_index_still_lists_is_refused_and_nothing_is_recorded(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    """What guarantees.md says a person may see while the inbox catches up: a question of a session
    deleted a moment ago is still listed, and answering it is refused (404) with nothing recorded."""
    service = make_service("nested", approver_principals=("alice",))
    view = service.start_turn(session_id, PROMPT)
    [question] = view.interactions
    with lagging(BEHIND, least=BEHIND):
        service.delete_session(session_id)
        listed = [i.request_id for i in service.inbox("alice").interactions]
        assert question.request_id in listed, "the index still lists it: the docs say so"
        with pytest.raises(NotFoundError):
            service.submit_approval(session_id, view.turn_id, question.request_id, APPROVE, "alice")
    assert executions(ledger) == []
    assert not service.restore_session(session_id).deleted
    [after] = service.get_turn(session_id, view.turn_id).interactions
    assert (after.status, after.response) == ("superseded", None)  # (closed by the deletion's cancel, unanswered)


# -- interleavings of writes and lagging reads ------------------------------------------------------

SESSION = st.integers(0, 1)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("start"), SESSION),
        st.tuples(st.just("vote"), SESSION, st.sampled_from(["alice", "bob"])),
        st.tuples(st.just("vote"), SESSION, st.sampled_from(["alice", "bob"])),
        st.tuples(st.just("deny"), SESSION),
        st.tuples(st.just("advance"), st.sampled_from([60, 3600, 90_000])),  # (the last: past a question's expiry)
        st.just(("sweep",)),
        st.just(("inbox",)),
        st.just(("audit",)),
    ),
    min_size=1,
    max_size=10,
)
TWO_PERSON = [{"tools": ["delete_*"], "required": 2, "name": "two-person delete"}]
OWNER = "arn:aws:iam::123456789012:role/agent-runner"


class _World:
    """One example's table, its services and what the consistent reads say (the truth)."""

    def __init__(self, make_service: Callable[..., Service], table: str, clock: FakeClock) -> None:
        self.clock = clock
        self.service = make_service(
            "nested",
            table_name=table,
            approval_rules=parse_rules(TWO_PERSON),
            approver_principals=("alice", "bob"),
            index_shards=2,  # (what lags matters here, not how many shards: a read of every shard is 2 Queries)
        )
        self.since = datetime.fromtimestamp(clock.now() - 60, UTC).isoformat()  # (the trail read: of this example)
        self.turns: dict[str, list[str]] = {}  # session -> its turns, the latest last
        self.settled: dict[tuple[str, str], str] = {}  # a settled turn's fingerprint: it never changes

    def session(self, n: int) -> str:
        return f"lag-{n}"

    def trees(self) -> list[TurnView]:
        return [self.service.get_turn(s, t) for s, turns in self.turns.items() for t in turns]

    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        try:
            if kind == "start":
                started = self.service.start_turn(self.session(step[1]), PROMPT, OWNER)
                self.turns.setdefault(started.session_id, []).append(started.turn_id)
            elif kind in ("vote", "deny"):
                self.answer(self.session(step[1]), step[2] if kind == "vote" else "alice", kind == "vote")
            elif kind == "advance":
                self.clock.advance(step[1])
            elif kind == "sweep":
                self.service.sweep()
            elif kind == "inbox":
                self.check_inbox(caught_up=False)
            elif kind == "audit":
                self.check_audit()
        except (ConflictError, GoneError, TurnBusyError, ForbiddenError, NotFoundError):
            pass  # (refused, rightly: a question answered, expired or settled meanwhile; a turn still busy)

    def answer(self, session_id: str, who: str, approve: bool) -> None:
        """Answer what ``who``'s inbox (a lagging read) lists of the session, else what the turn asks (a
        session not started yet is started first)."""
        if session_id not in self.turns:
            self.turns[session_id] = [self.service.start_turn(session_id, PROMPT, OWNER).turn_id]
        turn_id = self.turns[session_id][-1]
        listed = [i for i in self.service.inbox(who, limit=50).interactions if i.session_id == session_id]
        asked = listed or [
            i for i in self.service.get_turn(session_id, turn_id).interactions if i.status == "requested"
        ]
        if asked:
            response = APPROVE if approve else {"decision": "deny", "message": "no"}
            self.service.submit_approval(session_id, asked[0].turn_id, asked[0].request_id, response, who)

    def check(self, ledger: Path) -> None:
        """What holds whatever the lag: each answer once, a two-person approval only with two, each approved
        action run once, a settled turn never changing again."""
        approved = 0
        for tree in self.trees():
            for question in tree.interactions:
                if question.status == "answered" and question.response.get("decision") == "approve":
                    approved += 1
                    assert sorted(a.by for a in question.approvals) == ["alice", "bob"], question
            key = (tree.session_id, tree.turn_id)
            if tree.status in ("completed", "failed", "canceled", "expired", "interrupted"):
                fingerprint = tree.model_dump_json()
                assert self.settled.setdefault(key, fingerprint) == fingerprint, "a settled turn changed"
        assert len(executions(ledger)) == approved, (executions(ledger), approved)
        self.check_audit(limit=100)

    def requested(self) -> set[str]:
        now = self.clock.now()
        return {
            i.request_id
            for tree in self.trees()
            for i in tree.interactions
            if i.status == "requested" and (i.expires_at is None or _seconds(i.expires_at) > now)
        }

    def check_inbox(self, caught_up: bool) -> None:
        """A walk of the inbox (pages of 1) lists each question once, and only questions asked here;
        once the index caught up, exactly those waiting."""
        listed: list[str] = []
        cursor = None
        while True:
            page = self.service.inbox("alice", limit=1, cursor=cursor)
            listed += [i.request_id for i in page.interactions]
            cursor = page.cursor
            if cursor is None:
                break
        assert len(listed) == len(set(listed)), listed
        asked = {i.request_id for tree in self.trees() for i in tree.interactions}
        assert set(listed) <= asked
        if caught_up:
            assert set(listed) == self.requested()

    def check_audit(self, limit: int = 2) -> None:
        """A walk of the trail (pages of ``limit``) holds one decision for each question answered, at once."""
        decided: list[str] = []
        page = None
        while page is None or page.cursor is not None:
            page = self.service.audit(None, limit=limit, since=self.since, after=page.cursor if page else None)
            decided += [r.request_id for r in page.records if r.kind == "decision"]
        answered = {i.request_id for tree in self.trees() for i in tree.interactions if i.status == "answered"}
        assert sorted(decided) == sorted(answered)


def _seconds(moment: str) -> float:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp()


@settings(
    max_examples=8,
    derandomize=True,  # (the same interleavings every run: each of them fails when a guarded read is made to lag)
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# (the interleavings each fix guards, always tried: a deny read back at once; two votes, then the trail and
# the inbox; a question past its expiry swept while the index still shows it waiting)
@example(steps=[("start", 0), ("deny", 0)], most=16, seed=5)
@example(steps=[("start", 0), ("vote", 0, "alice"), ("inbox",), ("vote", 0, "bob"), ("audit",)], most=24, seed=1)
@example(steps=[("start", 0), ("start", 1), ("advance", 90_000), ("sweep",), ("inbox",), ("sweep",)], most=32, seed=2)
@given(steps=STEPS, most=st.integers(16, 48), seed=st.integers(0, 2**16))
def test_any_interleaving_of_writes_and_lagging_reads_keeps_every_guarantee_and_catches_up(
    make_service: Callable[..., Service], clock: FakeClock, ledger: Path, steps: list[Any], most: int, seed: int
) -> None:
    """The sweeper, the inbox's pages, votes under a two-person rule and the audit walk, in any order,
    while the index (and every read without ConsistentRead) lags 0 to ``most`` requests (at least 16: the
    suite runs without a lag too): each answer is
    recorded once and counts once, each approved action runs once, a settled turn never changes, a walk
    of the inbox or the trail never lists a question twice and the trail misses no decision; once the
    index catches up, the inbox lists exactly what waits and a sweep past the expiry settles every turn."""
    table = f"lag-{uuid.uuid4().hex[:12]}"
    client = make_service().store.dynamodb  # type: ignore[attr-defined]
    client.create_table(**create_table_request(table))
    ledger.write_text("")
    try:
        world = _World(make_service, table, clock)
        with lagging(most, seed=seed):
            for step in steps:
                world.step(step)
                world.check(ledger)
            for _ in range(most + 1):  # (the index catches up: each request moves the lag on)
                client.describe_table(TableName=table)
            world.check_inbox(caught_up=True)
            world.check_audit()
            clock.advance(90_000)
            for _ in range(most + 1):
                client.describe_table(TableName=table)
            world.service.sweep()
            for _ in range(most + 1):
                client.describe_table(TableName=table)
            world.service.sweep()  # (one the lagging index may have shown as not yet due is due now)
            world.check(ledger)
            unsettled = [t for t in world.trees() if t.status in ("running", "waiting")]
            assert not unsettled, unsettled
    finally:
        client.delete_table(TableName=table)
