"""``make soak``: randomized, seeded, time-bounded scenarios against the embedded AWS, each checked
against DESIGN.md's guarantees.

A scenario: a random agent tree (fan-out, depth, guarded tools or not), of our agents or, in about half
the scenarios, of Strands Agents SDK agents run by StrandsTree (tests.trees.strands_factory: every shape
maps; in some, sub-agents keep their context in the run's session), sometimes with a time budget of 0
(every turn checkpointed and continued), then random moves until the turn settles: answers (approve or
deny, one at a time), the same answer delivered 1 to 3 times at once, cancels at random moments, a
crash at a random AWS call of a move (before the call, or after it landed) followed by recovery from
another process once the lease has expired, expiry, and a turn's snapshot made unloadable and
repaired. After every scenario:

1. every approved action ran at most once, and exactly once when its turn completed (at most once
   when the journal shows a crash left one started but not finished: its outcome is unknown); no
   action ran without its approval; in a tree without approvals, every action ran when the turn
   completed (such tools may run again after a crash: only approved actions are journaled);
2. no recorded answer was lost (an interaction seen answered stays answered, with that response);
3. a settled turn never changes (a duplicate answer, a cancel, recover and a read change nothing);
4. a settled root has only settled children;
5. a settled turn's interactions are all answered, superseded or expired.

``SOAK_SECONDS`` (default 120) bounds the run, ``SOAK_SEED`` (default 1) seeds it; scenario ``n`` of
a run uses the seed ``<SOAK_SEED>-<n>``, and ``SOAK_SCENARIO=n`` runs only that one again. The test
suite runs a fixed number of scenarios instead (``soak(scenarios=...)``): how many fit into a time
window depends on how busy the machine is, which no test may depend on.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from resumable.config import Settings
from resumable.exceptions import ResumableError, ServiceError
from resumable.local import embedded_aws, lag
from resumable.local.lag import LAG
from resumable.service import Service, TurnView
from resumable.store import DynamoDBStore, S3Snapshots
from resumable.store.records import SETTLED, TurnTree
from resumable.store.resources import create_table_request
from tests.clock import FakeClock
from tests.trees import Shape, actions_of, factory, strands_factory

LEASE = 60.0
EXPIRY = 3600
STRANDS_SHARE = 0.5
"""The share of scenarios whose tree is of Strands agents."""


class Crash(Exception):  # noqa: N818 - a process dying, not an error
    """The process making this AWS call dies."""


@dataclass
class Faults:
    """Crash at AWS call ``at`` of the clients it is attached to (``after``: once the call landed)."""

    at: int
    after: bool
    calls: int = 0
    fired: bool = False

    def attach(self, service: Service) -> None:
        store = service.store
        assert isinstance(store, DynamoDBStore)
        for aws in (store.dynamodb, service.snapshots.s3):
            aws.meta.events.register("before-call.*.*", self._before)
            aws.meta.events.register("after-call.*.*", self._after)

    def _before(self, **_: Any) -> None:
        if not self.after:
            self._tick()

    def _after(self, **_: Any) -> None:
        if self.after:
            self._tick()

    def _tick(self) -> None:
        if self.fired:
            return
        self.calls += 1
        if self.calls > self.at:
            self.fired = True
            raise Crash(f"crash at call {self.at} ({'after' if self.after else 'before'})")


@dataclass
class Scenario:
    seed: str
    settings: Settings
    rng: random.Random = field(init=False)
    clock: FakeClock = field(default_factory=FakeClock)
    session: str = field(default_factory=lambda: f"soak-{uuid.uuid4().hex[:12]}")
    faults: int = 0
    checks: int = 0
    violations: list[str] = field(default_factory=list)
    answers: dict[str, Any] = field(default_factory=dict)
    continuations: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.shape = Shape(
            fan_out=self.rng.choice([0, 1, 1, 2, 3]),
            depth=self.rng.choice([1, 1, 2, 3]),
            guarded=self.rng.random() < 0.85,
        )
        self.budget = self.rng.choice([15.0, 15.0, 0.0])
        self.strands = self.rng.random() < STRANDS_SHARE
        self.preserve_context = self.strands and self.rng.random() < 0.3
        self.factory = strands_factory(self.shape, self.preserve_context) if self.strands else factory(self.shape)

    # -- processes ----------------------------------------------------------------------------------------

    def service(self, crash: bool = False, sweeper: bool = False) -> Service:
        """A new process. With ``crash``, sometimes one that dies at a random AWS call. ``sweeper``: one
        with no continuation to ask for, which moves a turn on itself (as recover does)."""
        settings = self.settings.model_copy(
            update={"turn_budget_seconds": self.budget, "lease_seconds": LEASE, "approval_expiry_seconds": EXPIRY}
        )
        made = Service(
            DynamoDBStore(settings),
            settings,
            self.clock,
            self.factory,
            continuation=None if sweeper else lambda session, turn: self.continuations.append((session, turn)),
        )
        if crash and self.rng.random() < 0.3:
            Faults(self.rng.randrange(0, 14), self.rng.random() < 0.5).attach(made)
        return made

    def attempt(self, move: Callable[[Service], TurnView]) -> TurnView | None:
        """Run ``move`` in a process that may die; after a death, wait out the lease and recover."""
        try:
            return move(self.service(crash=True))
        except ServiceError:
            return None
        except (Crash, ResumableError) as error:
            if not (isinstance(error, Crash) or isinstance(error.__cause__, Crash)):
                raise
            self.faults += 1
            self.clock.advance(LEASE + 1)
            return self.recover()

    def recover(self) -> TurnView | None:
        """``recover``, or half the time the sweeper, which finds the turn through its index (twice: a
        first run the index, lagging, may not show it to)."""
        tree = self.tree()
        if tree is None:
            return None
        if self.rng.random() < 0.5:
            return self.service().recover(self.session, tree.root.turn_id)
        self.service(sweeper=True).sweep()
        self.service(sweeper=True).sweep()
        return self.service().get_turn(self.session, tree.root.turn_id)

    def tree(self) -> TurnTree | None:
        """The session's (only) root turn as stored, or None if none was created."""
        store = DynamoDBStore(self.settings)
        items = store.dynamodb.query(
            TableName=store.table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :turn)",
            ExpressionAttributeValues={":pk": {"S": f"SESSION#{self.session}"}, ":turn": {"S": "TURN#"}},
            ConsistentRead=True,
        )["Items"]
        roots = {
            i["turn_id"]["S"] for i in items if i.get("entity", {}).get("S") == "turn" and "#" not in i["sk"]["S"][5:]
        }
        if len(roots) > 1:
            self.violate(f"{len(roots)} root turns in one session")
        return store.load_tree(self.session, min(roots)) if roots else None

    # -- the scenario --------------------------------------------------------------------------------------

    def run(self) -> None:
        self.attempt(lambda s: s.start_turn(self.session, "go"))
        if self.tree() is None:  # it died before the turn existed: a client retries
            self.service().start_turn(self.session, "go")
        for _ in range(40):
            tree = self.tree()
            assert tree is not None
            self.observe(tree)
            if tree.root.status in SETTLED:
                break
            self.move(tree)
        else:
            self.violate("the turn never settled in 40 moves")
        tree = self.tree()
        assert tree is not None
        self.check(tree)

    def move(self, tree: TurnTree) -> None:
        root = tree.root
        roll = self.rng.random()
        if root.status == "running":
            self.continuations.clear()
            self.attempt(lambda s: s.recover(self.session, root.turn_id))
            return
        requested = [i for i in tree.interactions if i.status == "requested"]
        if roll < 0.08:
            self.attempt(lambda s: s.cancel(self.session, root.turn_id))
        elif roll < 0.11:
            self.clock.advance(EXPIRY + 1)
            self.attempt(lambda s: s.get_turn(self.session, root.turn_id))
        elif roll < 0.14 and root.snapshot_key:
            self.unloadable_then_repaired(root.snapshot_key, requested)
        elif requested:
            # Half the time what the inbox lists (an index, which may lag: a question answered or closed a
            # moment ago is refused, rightly), else what the turn asks.
            listed = [i for i in self.service().inbox(None, limit=50).interactions if i.session_id == self.session]
            from_inbox, pick = self.rng.random() < 0.5, self.rng.random()  # (two draws, whatever the inbox said)
            pool: list[Any] = listed if from_inbox and listed else requested
            interaction = pool[int(pick * len(pool))]
            response = {"decision": "approve"} if self.rng.random() < 0.75 else {"decision": "deny", "message": "no"}
            copies = self.rng.choice([1, 1, 2, 3])
            if copies == 1:
                self.attempt(
                    lambda s: s.submit_approval(self.session, root.turn_id, interaction.request_id, response, "ann")
                )
            else:
                self.at_once(
                    [
                        lambda: self.service().submit_approval(
                            self.session, root.turn_id, interaction.request_id, response, "ann"
                        )
                        for _ in range(copies)
                    ]
                )
        else:  # waiting with everything answered: the resume was lost
            self.attempt(lambda s: s.recover(self.session, root.turn_id))

    def at_once(self, calls: list[Callable[[], TurnView]]) -> None:
        barrier = threading.Barrier(len(calls))

        def run(call: Callable[[], TurnView]) -> None:
            barrier.wait()
            with contextlib.suppress(ServiceError):
                call()

        threads = [threading.Thread(target=run, args=(call,)) for call in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    def unloadable_then_repaired(self, key: str, requested: list[Any]) -> None:
        s3, bucket = S3Snapshots(self.settings).s3, self.settings.bucket_name
        original = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        s3.put_object(Bucket=bucket, Key=key, Body=b'{"schema_version": "1.0", "agent": "roo')
        if requested:
            interaction = requested[0]
            self.attempt(
                lambda s: s.submit_approval(
                    self.session, interaction.root_turn_id, interaction.request_id, {"decision": "approve"}, "ann"
                )
            )
        s3.put_object(Bucket=bucket, Key=key, Body=original)
        self.recover()

    # -- the guarantees -----------------------------------------------------------------------------------

    def observe(self, tree: TurnTree) -> None:
        for interaction in tree.interactions:
            known = self.answers.get(interaction.request_id)
            if known is not None:
                self.checks += 1
                if interaction.status != "answered" or interaction.response != known:
                    self.violate(f"answer to {interaction.request_id} lost: now {interaction.status}")
            elif interaction.status == "answered":
                self.answers[interaction.request_id] = interaction.response

    def check(self, tree: TurnTree) -> None:
        root = tree.root
        self.observe(tree)
        self.checks += 3
        if root.status not in SETTLED:
            return
        unsettled = [c.turn_id for c in tree.children if c.status not in SETTLED]
        if unsettled:
            self.violate(f"root {root.status} with unsettled children {unsettled}")
        open_ones = [i.request_id for i in tree.interactions if i.status == "requested"]
        if open_ones:
            self.violate(f"root {root.status} with requested interactions {open_ones}")
        self.check_actions(tree)
        before = self.fingerprint(tree)
        late = self.service()
        with contextlib.suppress(ServiceError):
            late.cancel(self.session, root.turn_id)
        late.recover(self.session, root.turn_id)
        late.get_turn(self.session, root.turn_id)
        for answered in [i for i in tree.interactions if i.status == "answered"]:
            with contextlib.suppress(ServiceError):
                late.submit_approval(self.session, root.turn_id, answered.request_id, answered.response, "ann")
        self.checks += 1
        after = self.tree()
        if after is None or self.fingerprint(after) != before:
            self.violate("a settled turn changed")

    def check_actions(self, tree: TurnTree) -> None:
        ran = actions_of(self.session)
        self.checks += 1
        # Only approved actions go through the journal; a tool that needs no approval is re-run when a
        # crash sends the turn back to its last commit (DESIGN.md promises "never twice" for approvals).
        if self.shape.guarded and any(n > 1 for n in ran.values()):
            self.violate(f"an approved action ran more than once: {ran}")
        if self.shape.guarded:
            approved = {
                i.reason["input"]["name"]
                for i in tree.interactions
                if i.status == "answered" and isinstance(i.response, dict) and i.response.get("decision") == "approve"
            }
            unapproved = set(ran) - approved
            if unapproved:
                self.violate(f"actions ran without approval: {sorted(unapproved)}")
        else:
            approved = set(self.shape.actions())
        if tree.root.status == "completed" and not self.unknown_outcomes():
            missing = sorted(approved - set(ran))
            if missing:
                self.violate(f"the turn completed but approved actions never ran: {missing}")

    def unknown_outcomes(self) -> bool:
        """Whether the journal holds an action started but not finished (a crash hid its outcome)."""
        store = DynamoDBStore(self.settings)
        items = store.dynamodb.query(
            TableName=store.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"SESSION#{self.session}"}},
            ConsistentRead=True,
        )["Items"]
        return any(i.get("entity", {}).get("S") == "action" and i["status"]["S"] == "started" for i in items)

    @staticmethod
    def fingerprint(tree: TurnTree) -> str:
        root = tree.root
        parts = {
            "root": [root.status, root.version, root.output, root.error, root.snapshot_key],
            "children": sorted((c.turn_id, c.status) for c in tree.children),
            "interactions": sorted((i.request_id, i.status, json.dumps(i.response)) for i in tree.interactions),
        }
        return json.dumps(parts, sort_keys=True)

    def violate(self, what: str) -> None:
        runtime = "ours" if not self.strands else f"Strands, preserve_context={self.preserve_context}"
        self.violations.append(f"scenario {self.seed} ({self.shape}, {runtime}, budget {self.budget}): {what}")


def soak(seconds: float, seed: str, only: int | None = None, scenarios: int | None = None) -> dict[str, Any]:
    """Run scenarios until ``seconds`` have passed, or, with ``scenarios``, exactly that many (then
    ``seconds`` only stops a run that never ends: ``totals["stopped"]`` says it did)."""
    totals: dict[str, Any] = {
        "scenarios": 0,
        "strands": 0,
        "faults": 0,
        "checks": 0,
        "violations": [],
        "stopped": False,
    }
    deadline = time.monotonic() + seconds
    named = f"soak-{uuid.uuid4().hex[:8]}"  # (a soak of its own: another may have run in this process)
    with embedded_aws(table_name=named, bucket_name=named) as base:
        n = only or 0
        lagging = (LAG.most, LAG.seed, LAG.least) if LAG.on else None
        while True:
            if lagging is not None:  # (each scenario lags as it does alone: SOAK_SCENARIO replays it)
                lag.configure(lagging[0], zlib.crc32(f"{lagging[1]}/{seed}/{n}".encode()), lagging[2])
            table = f"soak-{uuid.uuid4().hex[:8]}"
            settings = base.model_copy(update={"table_name": table})
            store = DynamoDBStore(settings)
            store.dynamodb.create_table(**create_table_request(table))  # type: ignore[arg-type]
            scenario = Scenario(f"{seed}-{n}", settings)
            try:
                scenario.run()
            except Exception as error:  # a scenario that blows up is a finding too
                scenario.violate(f"raised {type(error).__name__}: {error}")
            store.dynamodb.delete_table(TableName=table)
            totals["scenarios"] += 1
            totals["strands"] += scenario.strands
            totals["faults"] += scenario.faults
            totals["checks"] += scenario.checks
            totals["violations"] += scenario.violations
            n += 1
            if only is not None or totals["scenarios"] == scenarios:
                break
            if time.monotonic() >= deadline:
                totals["stopped"] = scenarios is not None
                break
        if lagging is not None:
            lag.configure(*lagging)
    return totals


def main() -> int:
    seconds = float(os.environ.get("SOAK_SECONDS", "120"))
    seed = os.environ.get("SOAK_SEED", "1")
    only = os.environ.get("SOAK_SCENARIO")
    started = time.monotonic()
    totals = soak(seconds, seed, int(only) if only else None)
    print(
        f"soak: seed {seed}, {time.monotonic() - started:.0f} s: {totals['scenarios']} scenarios "
        f"({totals['strands']} of Strands trees), "
        f"{totals['faults']} faults injected, {totals['checks']} invariant checks, "
        f"{len(totals['violations'])} violations"
        + (f", the index lagging {LAG.least} to {LAG.most} requests (seed {LAG.seed})" if LAG.on else "")
    )
    lagged = f"RESUMABLE_INDEX_LAG={LAG.least}-{LAG.most} RESUMABLE_INDEX_LAG_SEED={LAG.seed} " if LAG.on else ""
    for violation in totals["violations"]:
        print(f"  VIOLATION {violation}")
        scenario = violation.split()[1].rsplit("-", 1)
        print(f"    reproduce: {lagged}make soak SOAK_SEED={scenario[0]} SOAK_SCENARIO={scenario[1]}")
    return 1 if totals["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
