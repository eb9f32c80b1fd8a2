"""The lease a run holds on its turn, renewed at every step boundary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from resumable.store.records import TurnRecord

if TYPE_CHECKING:
    from resumable.service.service import Service


class LeaseGuard:
    """The stop signal of a leased run: renews the lease at every step boundary and reports a cancel
    request. Raises ``LeaseLostError`` (which ends the run without a commit) if the lease was lost.

    The first boundary comes right after the lease was taken, by a write that already required no
    cancel request, so it costs no call.
    """

    def __init__(self, service: Service, root: TurnRecord, owner: str) -> None:
        self.service = service
        self.root = root
        self.owner = owner
        self.fresh = True

    def __call__(self) -> bool:
        if self.fresh:
            self.fresh = False
            return False
        now = self.service.clock.now()
        self.root = self.service.store.renew_lease(
            self.root, self.owner, now, now + self.service.settings.lease_seconds
        )
        return self.root.cancel_requested
