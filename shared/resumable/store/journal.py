"""The action journal on the store: an approved action runs at most once per approval.

Before the action runs, a conditional put records that it started; after, its result. A re-run
(after a crash, a takeover, a duplicate delivery) finds the entry: a finished action's result is
given back without running it again, and a started-but-not-finished one is not run again at all:
the model is told its outcome is unknown. An action starts only while its run still holds the
turn's lease and no cancel was requested (checked in the same write).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from resumable.clock import Clock
from resumable.runtime.interrupts import InterruptException
from resumable.runtime.tools import tool_result
from resumable.store.base import Store

logger = logging.getLogger(__name__)

UNKNOWN_OUTCOME = (
    "The outcome of this approved action is UNKNOWN: an earlier attempt started it and stopped before its "
    "result was recorded. It was NOT run again. Do not report it as done or as not done; tell the user to "
    "check whether it took effect before asking for it again."
)


class StoreActionJournal:
    """``ActionJournal`` for the approved actions of one root turn's tree."""

    def __init__(self, store: Store, session_id: str, root_turn_id: str, lease_owner: str, clock: Clock) -> None:
        self.store = store
        self.session_id = session_id
        self.root_turn_id = root_turn_id
        self.lease_owner = lease_owner
        self.clock = clock

    def run(self, key: str, tool_use_id: str, action: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        earlier = self.store.begin_action(self.session_id, self.root_turn_id, key, self.clock.now(), self.lease_owner)
        if earlier is None:
            try:
                result = action()
            except InterruptException:
                # The action paused before doing anything: it has not started after all.
                self.store.abandon_action(self.session_id, self.root_turn_id, key)
                raise
            self.store.finish_action(self.session_id, self.root_turn_id, key, result, self.clock.now())
            return result
        if earlier.status == "finished" and earlier.result is not None:
            logger.info(
                "turn_id=<%s>, action=<%s> | approved action already ran, its result is reused", self.root_turn_id, key
            )
            return {**earlier.result, "toolUseId": tool_use_id}
        logger.error(
            "turn_id=<%s>, action=<%s> | approved action started earlier and never finished: not running it again",
            self.root_turn_id,
            key,
        )
        return tool_result(tool_use_id, UNKNOWN_OUTCOME, "error")
