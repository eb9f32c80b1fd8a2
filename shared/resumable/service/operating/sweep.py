"""sweep: move on the turns nobody is moving, so that nothing waits for somebody to poll.

The sweeper runs on a schedule. It reads the unsettled root turns that are due a look from the
store's index (no scan: every write that could make a turn need moving on sets when it is due, and
the sweeper sets the next look of those it finds not stalled yet), and moves each stalled one on
through the use cases a reader would (``service.advancing.stall`` names the cases): it settles a turn whose
question expired or whose cancel died before it settled the tree, and asks for a continuation of a
turn whose runner is gone, that was checkpointed and not continued, or whose every answer is
recorded but whose resume was lost (with no continuation to ask for, it runs the turn itself, as
``recover`` does).

It escalates the questions whose approval rule says to, once nobody settled them for
``escalate_after`` (service.escalation), and denies, rather than expires, those whose rule says
``on_expiry: deny`` (service.settlement).

It also ends the retention of records whose time has come (service.retention): it retires the
snapshots only they pointed at; tells a durable function how its turn settled where the settling could
not, and sends heartbeats to those that wait with a heartbeat timeout (service.advancing.callback).

Bounded: at most ``limit`` turns (and then records whose retention ended) a run, the earliest due
first. Safe to run twice at once: before it
moves a turn the sweeper sets the turn's next look, on condition that nothing set it since it was
read, so of two sweepers that found the same turn one moves it and the other leaves it. A turn the
sweeper moved ``ATTEMPTS`` times without it committing anything is given up on (stuck): it is kept
apart, counted (the ``StuckTurns`` metric, which an alarm watches: each run counts them after its
own moves, from the index and the turns it gave up on, each read again consistently), tried once more every
``STUCK_RECHECK_SECONDS``, and shown by ``resumable admin stuck``; it rejoins the others as soon as
anything moves it (an answer, a cancel, a recover).

An AWS failure of one turn's look is logged and the run goes on; one of the audit trail's delivery or
of the stuck count is logged and the next run does it. One of the reads of the turns due a look, or of
the end of retention (the index throttled past botocore's retries), is logged too, and the run does the
rest (looks at the turns it read, ends retention, delivers and counts), and then fails with the first
such error: its function's errors alarm, and the next run does what this one could not.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from resumable.exceptions import AwsError, StaleCommitError
from resumable.metrics import count
from resumable.service.advancing.advance import advance
from resumable.service.advancing.callback import CALLBACK_ATTEMPTS, give_up, keep_alive, owed, tell_callback
from resumable.service.advancing.continuation import continue_later
from resumable.service.advancing.settlement import settle_stalled
from resumable.service.advancing.stall import SETTLES, Stall, idle, stall
from resumable.service.answering.escalation import escalate
from resumable.service.audit.delivery import deliver
from resumable.service.retention import expire
from resumable.store.base import DueTurn
from resumable.store.codec import CALLBACK_GRACE, heartbeat_due
from resumable.store.records import TurnRecord, TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

logger = logging.getLogger(__name__)

ATTEMPTS = 3
"""How many times the sweeper moves a turn on that then commits nothing, before giving up on it."""
STUCK_RECHECK_SECONDS = 3600.0
"""How long a turn the sweeper gave up on waits for its next try."""
DEFAULT_LIMIT = 100


@dataclass
class SweepReport:
    """What one run of the sweeper found and did."""

    looked: int = 0
    moved: Counter[Stall] = field(default_factory=Counter)
    """The stalled turns it moved on, by why they were stalled (its finds)."""
    not_yet: int = 0
    """Turns it found not stalled yet, and set to be looked at again when they could be."""
    gave_up_on: list[TurnRecord] = field(default_factory=list, repr=False)
    """Turns it gave up on in this run (the index may not list them yet when it counts the stuck ones)."""
    stuck: int | None = 0
    """Turns given up on, in all, after this run (None: they could not be counted)."""
    failed: int = 0
    """Turns it could not act on for an AWS failure (looked at again in the next run)."""
    expired: int = 0
    """Records whose retention ended, whose snapshots it retired (see service.retention)."""
    escalated: int = 0
    """Questions whose rule's ``escalate_to`` it let answer them (see service.escalation)."""
    told: int = 0
    """Durable functions it told how the turn they wait on settled (their settling could not: see
    service.advancing.callback)."""
    heartbeats: int = 0
    """Heartbeats it sent to durable functions waiting on unsettled turns."""
    callbacks_failing: bool = False
    """Whether a send to a durable function failed in this run (it sends no more until the next)."""
    delivered: int = 0
    """Hours of the audit trail it delivered to the trail's bucket (see service.audit.delivery)."""

    @property
    def given_up(self) -> int:
        """How many turns it gave up on in this run."""
        return len(self.gave_up_on)


def sweep(deps: Dependencies, limit: int = DEFAULT_LIMIT) -> SweepReport:
    """One run of the sweeper (see the module): at most ``limit`` turns, the earliest due first."""
    now, report = deps.clock.now(), SweepReport()
    found: list[DueTurn] = []
    first_failure: AwsError | None = None
    try:
        found += deps.store.due_turns(now, limit)
        if len(found) < limit:
            found += deps.store.due_turns(now, limit - len(found), stuck=True)
    except AwsError as error:  # (the run does what does not need them, then fails: its function's errors alarm)
        first_failure = error
        logger.error(
            "the sweeper could not read the turns due a look (it looks at the %d it read, expires, delivers and "
            "counts, then fails; the next run reads them again): %s",
            len(found),
            error,
        )
    for turn in found:
        report.looked += 1
        try:
            _look(deps, turn, now, report)
        except AwsError as error:
            report.failed += 1
            logger.error(
                "session_id=<%s>, turn_id=<%s> | the sweeper could not move the turn on (next run tries again): %s",
                turn.root.session_id,
                turn.root.turn_id,
                error,
            )
    if report.looked < limit:
        try:
            report.expired = expire(deps, now, limit - report.looked)
        except AwsError as error:  # (the records stay due: the next run ends their retention)
            logger.error(
                "the sweeper could not end the retention of records whose time came (the next run tries again): %s",
                error,
            )
            first_failure = first_failure or error
    try:
        report.delivered = deliver(deps, now)
    except AwsError as error:  # (the hours stay undelivered: the next run delivers them, in order)
        logger.error("the sweeper could not deliver the audit trail (the next run tries again): %s", error)
    try:
        report.stuck = deps.store.count_stuck(also=report.gave_up_on)
    except AwsError as error:  # (the run's moves stand: the next run counts them)
        report.stuck = None
        logger.error("the sweeper could not count the stuck turns (StuckTurns is left out of this run): %s", error)
    for why, moved in report.moved.items():
        count("SweeperFinds", moved, Stall=why)
    if report.stuck is not None:
        count("StuckTurns", report.stuck)
    logger.info(
        "looked=<%d>, moved=<%s>, not_yet=<%d>, given_up=<%d>, stuck=<%s>, failed=<%d>, expired=<%d>, "
        "escalated=<%d>, told=<%d>, heartbeats=<%d>, delivered=<%d> | swept",
        report.looked,
        dict(report.moved),
        report.not_yet,
        report.given_up,
        report.stuck,
        report.failed,
        report.expired,
        report.escalated,
        report.told,
        report.heartbeats,
        report.delivered,
    )
    if first_failure is not None:
        raise first_failure
    return report


def _look(deps: Dependencies, found: DueTurn, now: float, report: SweepReport) -> None:
    root = found.root
    tree = deps.store.load_tree(root.session_id, root.turn_id)
    if tree is not None and owed(tree):  # (settled: the durable function waiting on it was not told)
        _tell(deps, found, tree, now, report)
        return
    if tree is not None and tree.root.settled and tree.root.version == root.version:
        deps.store.reindex_settled(tree.root)  # (a write made from a stale read left it among the due)
        return
    if tree is None or tree.root.settled:
        return  # it settled since it was found (settling takes it out of the index)
    try:
        report.heartbeats += 0 if report.callbacks_failing else keep_alive(deps, tree)
    except AwsError as error:  # (the turn is moved on all the same; the next look sends the next)
        report.callbacks_failing = True
        logger.error(
            "turn_id=<%s> | the sweeper could not send the durable function a heartbeat: %s", root.turn_id, error
        )
    escalated = escalate(deps, tree, now)
    if escalated:
        report.escalated += escalated
        tree = deps.store.load_tree(root.session_id, root.turn_id) or tree
    why = stall(tree, now)
    waits_to_be_taken_up = why in ("checkpointed", "answered_unresumed") and not idle(
        tree, now, deps.settings.stall_seconds
    )
    if why is None or waits_to_be_taken_up:
        report.not_yet += deps.store.reschedule(found, _next_look(deps, tree, now))
        return
    if not found.stuck and tree.root.sweeps >= ATTEMPTS:
        if deps.store.reschedule(found, now + STUCK_RECHECK_SECONDS, stuck=True):
            report.gave_up_on.append(root)
            logger.error(
                "session_id=<%s>, turn_id=<%s>, stall=<%s> | the sweeper moved the turn on %d times and it did not "
                "move: given up on (stuck; see docs/runbook.md)",
                root.session_id,
                root.turn_id,
                why,
                tree.root.sweeps,
            )
        return
    # Set the next look first, as found: of two sweepers that found this turn, only one goes on.
    next_look = now + (STUCK_RECHECK_SECONDS if found.stuck else deps.settings.stall_seconds)
    if not deps.store.reschedule(found, next_look, swept=True, stuck=found.stuck):
        return
    report.moved[why] += 1
    logger.warning("session_id=<%s>, turn_id=<%s>, stall=<%s> | the sweeper moves the turn on", root.session_id,
                   root.turn_id, why)  # fmt: skip
    if why in SETTLES:
        try:
            tree = settle_stalled(deps, tree, why)
        except StaleCommitError:
            logger.info("turn_id=<%s> | the turn changed while the sweeper settled it", root.turn_id)
            return
        if tree.root.settled or stall(tree, now) != "answered_unresumed":
            return
        # Its expired questions were denied (their rule says so): the turn goes on, told so.
    if deps.continuation is not None:
        continue_later(deps, tree.root)
    else:
        advance(deps, tree)


def _tell(deps: Dependencies, found: DueTurn, tree: TurnTree, now: float, report: SweepReport) -> None:
    """Tell the durable function how its turn settled, once its settling had its minute to, having set
    the next look first (of two sweepers that found it, one sends). Where AWS fails (Lambda, or a grant
    missing), try again later and later (2, 4, 8 ... minutes), and after ``CALLBACK_ATTEMPTS`` give up:
    recorded ``closed`` and counted, as a callback Lambda refuses. After one such failure a run sends no
    more: they wait for the next run, so a Lambda failing slowly never holds up the sweep."""
    grace_ends = tree.root.updated_at + CALLBACK_GRACE
    if now < grace_ends:  # (settled a moment ago, perhaps still sending: its settling tells it)
        deps.store.reschedule(found, grace_ends)
        return
    if report.callbacks_failing:
        return
    attempts = tree.root.sweeps + 1
    if not deps.store.reschedule(found, now + 60 * 2**attempts, swept=True):
        return  # another sweeper found it too, and goes on
    try:
        report.told += tell_callback(deps, tree)
    except AwsError:
        report.callbacks_failing = True
        if attempts < CALLBACK_ATTEMPTS:
            raise
        give_up(deps, tree, f"{CALLBACK_ATTEMPTS} attempts failed")


def _next_look(deps: Dependencies, tree: TurnTree, now: float) -> float:
    """When a turn found not stalled could next be: its lease's expiry, its first question's expiry or
    escalation, or (checkpointed, or answered, and taken up by nobody yet) once it has been idle long
    enough; sooner if its durable function is due a heartbeat."""
    moved = _moved_next(deps, tree, now)
    beat = heartbeat_due(tree.root, now)
    return moved if beat is None else min(moved, beat)


def _moved_next(deps: Dependencies, tree: TurnTree, now: float) -> float:
    root = tree.root
    if root.status == "running" and root.lease_owner is not None and (root.lease_expires_at or 0) > now:
        return float(root.lease_expires_at or now)
    expiries = [i.expires_at for i in tree.interactions if i.status == "requested" and i.expires_at > now]
    expiries += [at for i in tree.interactions if (at := i.escalates_at) is not None and at > now]
    if root.status == "waiting" and root.open_interactions > 0 and expiries:
        return min(expiries)
    return max(now, root.updated_at + deps.settings.stall_seconds)
