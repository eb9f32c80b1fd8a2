"""An answer's path through the service reads the turn tree once: the answer is checked against the
question it read, written conditionally, and the tree read after it is the one the run advances and
the reply shows (each later read is a race's: a lease lost, a commit gone stale)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from resumable.service import Service
from tests.factories import executions
from tests.integration.helpers import APPROVE


def test_an_approval_that_completes_its_turn_reads_the_tree_once(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    service = make_service()
    started = service.start_turn(session_id, "delete the prod-db record")
    [asked] = started.interactions
    reads: list[tuple[Any, ...]] = []
    load_tree = service.store.load_tree

    def counted(*args: Any) -> Any:
        reads.append(args)
        return load_tree(*args)

    service.store.load_tree = counted  # type: ignore[method-assign]
    done = service.submit_approval(session_id, started.turn_id, asked.request_id, APPROVE)
    assert done.status == "completed" and executions(ledger) == ["delete prod-db"]
    assert reads == [(session_id, started.turn_id)]
