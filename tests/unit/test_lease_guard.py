"""A run's step boundary: while three quarters of its lease are left it reads whether a cancel was
asked for (writing nothing); once a quarter has passed it renews the lease, which tells it the same, so
that every step starts with at least three quarters of the lease ahead of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from resumable.config import Settings
from resumable.service.advancing.lease import LeaseGuard
from resumable.store.records import TurnRecord
from tests.clock import FakeClock

LEASE = 90


@dataclass
class Store:
    calls: list[str] = field(default_factory=list)
    cancel: bool = False

    def check_lease(self, turn: TurnRecord, owner: str) -> bool:
        self.calls.append("check")
        return self.cancel

    def renew_lease(self, turn: TurnRecord, owner: str, now: float, until: float) -> TurnRecord:
        self.calls.append("renew")
        return turn.model_copy(update={"lease_expires_at": until, "cancel_requested": self.cancel})


@dataclass
class Deps:
    store: Any
    clock: FakeClock
    settings: Settings


def test_a_boundary_reads_while_three_quarters_of_the_lease_are_left_and_renews_it_once_a_quarter_passed() -> None:
    clock, store = FakeClock(), Store()
    root = TurnRecord(
        session_id="s", turn_id="t" * 32, root_turn_id="t" * 32, agent="a", agent_path=["a"], status="running",
        lease_owner="me", lease_expires_at=clock.now() + LEASE, created_at=clock.now(), updated_at=clock.now(),
    )  # fmt: skip
    guard = LeaseGuard(Deps(store, clock, Settings(lease_seconds=LEASE)), root, "me")  # type: ignore[arg-type]
    assert guard() is False and store.calls == [], "the first boundary comes as the lease was taken"
    assert guard() is False and store.calls == ["check"]
    clock.advance(LEASE / 4 - 1)
    assert guard() is False and store.calls == ["check", "check"]
    clock.advance(1)  # a quarter of it has passed
    assert guard() is False and store.calls[-1] == "renew"
    assert guard.until == clock.now() + LEASE
    assert guard() is False and store.calls[-1] == "check", "renewed: a whole lease is left"
    store.cancel = True
    assert guard() is True and store.calls[-1] == "check"
    clock.advance(LEASE / 4)
    assert guard() is True and store.calls[-1] == "renew"
