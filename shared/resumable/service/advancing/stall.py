"""Stalled: an unsettled turn that nobody is moving on, and why.

One word for every case a reader, ``recover`` or a scheduled sweep must act on:

- ``question_expired``: waiting, and a requested interaction is past its expiry. Settle it ``expired``.
- ``cancel_unsettled``: a cancel was requested, and the turn is waiting, or running with nobody
  running it. Settle it ``canceled`` (``interrupted`` if its runner's lease expired unconfirmed).
- ``answered_unresumed``: waiting with every interaction answered (its resume was lost or failed).
  Lease it and resume it.
- ``runner_gone``: running under a lease that expired. Take it over; re-run it from its last commit.
- ``checkpointed``: running with no lease (between invocations). Take it over and continue it.
"""

from __future__ import annotations

from typing import Literal

from resumable.store.records import TurnTree

Stall = Literal["question_expired", "cancel_unsettled", "answered_unresumed", "runner_gone", "checkpointed"]

# What settling moves on (the others need a run).
SETTLES: frozenset[Stall] = frozenset({"question_expired", "cancel_unsettled"})


def stall(tree: TurnTree, now: float) -> Stall | None:
    """Why nobody is moving ``tree`` on (see the module), or None: it is settled, waits for people,
    or a live runner holds it."""
    root = tree.root
    if root.status == "waiting":
        if any(i.status == "requested" and i.expires_at <= now for i in tree.interactions):
            return "question_expired"
        if root.cancel_requested:
            return "cancel_unsettled"
        return "answered_unresumed" if root.open_interactions == 0 else None
    if root.status != "running" or (root.lease_owner is not None and (root.lease_expires_at or 0) >= now):
        return None
    if root.cancel_requested:
        return "cancel_unsettled"
    return "checkpointed" if root.lease_owner is None else "runner_gone"


def idle(tree: TurnTree, now: float, seconds: float) -> bool:
    """Whether the turn has not changed for ``seconds`` (nobody took it up in that time): how long a
    checkpointed or fully answered turn may wait for the invocation that will move it on before a
    read asks for another (``Settings.stall_seconds``), so polling a turn that is about to move does
    not duplicate it."""
    return now - tree.root.updated_at >= seconds
