"""The heartbeat that keeps a run's lease while an approved action runs: its schedule follows the
clock, however long a renewal takes."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from resumable.config import Settings
from resumable.service.advancing.lease import LeaseGuard
from resumable.store.records import TurnRecord
from tests.clock import FakeClock
from tests.patience import HANG_SECONDS

LEASE = 90.0


@dataclass
class SlowStore:
    """A store whose first renewal blocks until the test lets it return."""

    clock: FakeClock
    renewed_at: list[float] = field(default_factory=list)
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    second: threading.Event = field(default_factory=threading.Event)

    def renew_lease(self, turn: TurnRecord, owner: str, now: float, until: float) -> TurnRecord:
        self.renewed_at.append(now)
        if len(self.renewed_at) == 1:
            self.entered.set()
            assert self.release.wait(HANG_SECONDS)
        else:
            self.second.set()
        return turn.model_copy(update={"lease_expires_at": until})


@dataclass
class Deps:
    store: Any
    clock: FakeClock
    settings: Settings


def test_a_renewal_that_returns_after_the_next_beat_was_due_is_followed_by_that_beat_at_once() -> None:
    clock = FakeClock()
    store = SlowStore(clock)
    root = TurnRecord(
        session_id="s", turn_id="t" * 32, root_turn_id="t" * 32, agent="a", agent_path=["a"], status="running",
        lease_owner="me", lease_expires_at=clock.now() + LEASE, created_at=clock.now(), updated_at=clock.now(),
    )  # fmt: skip
    guard = LeaseGuard(Deps(store, clock, Settings(lease_seconds=int(LEASE))), root, "me")  # type: ignore[arg-type]
    with guard.kept_alive():
        clock.advance(LEASE / 3)  # the first beat is due: it starts its renewal, which hangs
        assert store.entered.wait(HANG_SECONDS)
        clock.advance(LEASE / 3)  # the second beat falls due while the first renewal is still out
        store.release.set()
        assert store.second.wait(HANG_SECONDS), "the beat that fell due during the slow renewal never came"
    assert store.renewed_at == [clock.now() - LEASE / 3, clock.now()]
