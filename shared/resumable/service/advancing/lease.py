"""The lease a run holds on its turn: looked at every step boundary (renewed once a quarter of it has
passed), and kept alive while an approved action runs."""

from __future__ import annotations

import contextvars
import logging
import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from resumable.exceptions import AwsError, LeaseLostError
from resumable.store.records import TurnRecord

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

# How long an approved action's end waits for its heartbeat's last renewal.
_HEARTBEAT_JOIN_SECONDS = 120.0


class LeaseGuard:
    """The stop signal of a leased run: at every step boundary it reads whether a cancel was requested,
    and renews the lease once a quarter of it has passed, so that every step starts with at least three
    quarters of ``lease_seconds`` ahead of it. Raises ``LeaseLostError`` (which ends the run without a
    commit) if the lease was lost.

    The first boundary comes right after the lease was taken, by a write that already required no
    cancel request, so it costs no call. While three quarters of the lease are left a boundary reads the
    turn (a consistent read of three attributes: a read unit for a turn's item of up to 4 KB, a fifth of
    a renewal's write unit), then it renews it (a write that returns the turn). ``until`` is when the
    lease expires as far as this run knows (it set it); ``generation`` numbers the lease (every new
    holder's is higher: a fencing token).
    """

    def __init__(self, deps: Dependencies, root: TurnRecord, lease_owner: str) -> None:
        self.deps = deps
        self.root = root
        self.lease_owner = lease_owner
        self.until = root.lease_expires_at or 0.0
        self.fresh = True
        self._lock = threading.Lock()

    @property
    def generation(self) -> int:
        return self.root.lease_generation

    def __call__(self) -> bool:
        if self.fresh:
            self.fresh = False
            return False
        if self.deps.clock.now() < self.until - self.deps.settings.lease_seconds * 3 / 4:
            return self.deps.store.check_lease(self.root, self.lease_owner)
        return self.renew().cancel_requested

    def renew(self) -> TurnRecord:
        """Extend the lease by ``lease_seconds`` from now; ``LeaseLostError`` if another holds it."""
        now = self.deps.clock.now()
        until = now + self.deps.settings.lease_seconds
        with self._lock:
            self.root = self.deps.store.renew_lease(self.root, self.lease_owner, now, until)
            self.until = until
            return self.root

    def extended(self, until: float) -> None:
        """The lease was extended to ``until`` by another write (an approved action's start)."""
        with self._lock:
            self.until = max(self.until, until)

    def surely_held(self) -> bool:
        """Whether the lease is certainly still this run's without asking: at least half of it is left
        by this run's own clock (no other run may take it over before it expires). A run that was
        frozen past that point must renew it, and learns so if it was taken over."""
        return self.deps.clock.now() < self.until - self.deps.settings.lease_seconds / 2

    @contextmanager
    def kept_alive(self) -> Iterator[None]:
        """Renew the lease every third of ``lease_seconds`` (of the service's clock) while the block
        runs (a long approved action), so a live runner never loses the turn mid-action; a renewal
        that fails is tried again after a twelfth. A frozen process freezes this heartbeat too: then
        the lease expires, and what the action did is recorded as late.

        The beats keep to a schedule counted from the block's start, so a heartbeat that is slow to be
        scheduled still beats for every stretch of the clock that passed."""
        clock, stop = self.deps.clock, threading.Event()
        interval = self.deps.settings.lease_seconds / 3
        start = clock.now()

        def beat() -> None:
            deadline = start + interval
            while not clock.wait_until(stop, deadline):
                began = clock.now()  # the renewal's expiry counts from here, however long the call takes
                try:
                    self.renew()
                except LeaseLostError:
                    logger.error(
                        "turn_id=<%s>, lease_owner=<%s> | lease lost while an approved action ran",
                        self.root.turn_id,
                        self.lease_owner,
                    )
                    return
                except AwsError as error:
                    logger.warning(
                        "turn_id=<%s> | the lease could not be renewed (tried again soon): %s", self.root.turn_id, error
                    )
                    deadline = clock.now() + interval / 4
                    continue
                deadline = start + interval * (math.floor((began - start) / interval) + 1)

        # In the run's context: what the heartbeat calls is the same function's (its calls, its logs).
        in_context = contextvars.copy_context().run
        heartbeat = threading.Thread(target=in_context, args=(beat,), name=f"lease-{self.root.turn_id}", daemon=True)
        heartbeat.start()
        try:
            yield
        finally:
            stop.set()
            # At most one renewal is in flight; botocore's own timeouts bound it.
            heartbeat.join(_HEARTBEAT_JOIN_SECONDS)
            if heartbeat.is_alive():
                logger.error("turn_id=<%s> | the lease's heartbeat did not stop (left to finish)", self.root.turn_id)
