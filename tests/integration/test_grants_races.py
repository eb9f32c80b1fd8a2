"""Standing grants where a run dies after a granted call began, and its takeover races what the dead runner
left: the call is never asked about as new, never begun anew under a grant its rule no longer allows, and
never run again outside the journal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resumable.runtime.rules import parse_rules
from resumable.service import Service
from tests.clock import FakeClock
from tests.factories import executions
from tests.integration.helpers import store_of
from tests.integration.test_grants import ALICE, GRANTING, OWNER, Crash, approve, crashing_janitor, granting


def test_a_call_begun_under_a_grant_between_the_takeovers_tree_read_and_its_lease_is_not_asked_about(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    """Runner A begins the granted call's entry (its lease expired but nobody took it yet) after the
    sweeper read the tree and before it took the lease; the grant has expired by the takeover. The
    takeover reads its tree again once it holds the lease, finds the entry, and asks nobody about it."""
    service = granting(make_service)
    approve(service, service.start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h"})
    a = granting(make_service)
    a_store = store_of(a)
    a_begin = a_store.begin_action
    frozen: list[tuple[Any, Any]] = []

    def freeze(*args: Any, **kwargs: Any) -> Any:  # (A stops right before its entry's transaction)
        frozen.append((args, kwargs))
        raise Crash("frozen")

    a_store.begin_action = freeze  # type: ignore[method-assign]
    with pytest.raises(Crash):
        a.start_turn(session_id, "delete orders-2", OWNER)
    clock.advance(3600 + a.settings.lease_seconds + 1)  # (the grant expired; A's lease too)

    b = granting(make_service)
    b_store = store_of(b)
    acquire = b_store.acquire_lease

    def a_wakes_first(*args: Any, **kwargs: Any) -> Any:
        (args_, kwargs_) = frozen.pop()
        assert a_begin(*args_, **kwargs_) is None  # (A's entry begins: the grant held at its start)
        return acquire(*args, **kwargs)

    root_turn_id = frozen[0][0][1]
    b_store.acquire_lease = a_wakes_first  # type: ignore[method-assign]
    assert b.sweep().looked == 1
    view = b.get_turn(session_id, root_turn_id, ALICE)
    asked = [i for i in view.interactions if i.status == "requested"]
    assert asked == [], f"a call whose entry began under a grant was asked about: {asked[0].reason if asked else ''}"


def test_a_begun_entry_found_not_run_at_its_begin_does_not_run_under_a_grant_its_rule_no_longer_allows(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    """A began the granted call and froze; the takeover read the tree (entry started); A wakes, learns it
    lost the turn and records the entry not_run; the takeover, redeployed with a rule that allows no
    grants, reaches the call: the journal resumes an entry begun under a grant, never begins it anew, so
    the call that never ran asks a person."""
    service = granting(make_service)
    approve(service, service.start_turn(session_id, "delete orders-1", OWNER), ALICE, {"for": "1h"})
    a = granting(make_service)
    a_store = store_of(a)
    a_begin = a_store.begin_action
    began: list[Any] = []

    def begin_and_freeze(*args: Any, **kwargs: Any) -> Any:
        assert a_begin(*args, **kwargs) is None
        began.append(args)
        raise Crash("frozen after its entry began")

    a_store.begin_action = begin_and_freeze  # type: ignore[method-assign]
    with pytest.raises(Crash):
        a.start_turn(session_id, "delete orders-2", OWNER)
    clock.advance(a.settings.lease_seconds + 1)

    strict = make_service(
        "deletes_each_turn",
        approval_rules=parse_rules([{k: v for k, v in GRANTING.items() if k != "grants"}]),
        approver_principals=("alice", "bob"),
    )
    s_store = store_of(strict)
    s_mark = s_store.mark_action_unknown

    def a_records_not_run_first(*args: Any, **kwargs: Any) -> Any:  # (as the takeover finds the entry started)
        session, root, record = began[0][:3]
        a_store.mark_action_not_run(session, root, record, clock.now())  # (A's _not_run)
        return s_mark(*args, **kwargs)

    s_store.mark_action_unknown = a_records_not_run_first  # type: ignore[method-assign]
    strict.sweep()
    assert "delete orders-2" not in executions(ledger), "ran under a grant its rule no longer allows"
    [root_turn_id] = {args[1] for args in began}
    view = strict.get_turn(session_id, root_turn_id, ALICE)
    [asked] = [i for i in view.interactions if i.status == "requested"]  # (a person decides now)
    assert asked.reason["input"] == {"name": "orders-2"}


def test_a_granted_call_that_took_effect_is_not_run_again_when_the_takeovers_policy_no_longer_asks(
    make_service: Callable[..., Service], session_id: str, ledger: Path, clock: FakeClock
) -> None:
    """The tool needs approval only by the deployment's rule; the run dies after the granted call took
    effect; the takeover is deployed without the rule: the call's entry, begun under a grant, counts as
    its approval, so it goes back to the journal (its outcome unknown), never runs again outside it."""
    factory = crashing_janitor(["died after it took effect"], declared=False)

    def process(rules: list[dict[str, Any]]) -> Service:
        return make_service(factory, approval_rules=parse_rules(rules), approver_principals=("alice", "bob"))

    first = process([GRANTING]).start_turn(session_id, "delete orders-1", OWNER)
    approve(process([GRANTING]), first, ALICE, {"for": "1h"})
    with pytest.raises(Crash):
        process([GRANTING]).start_turn(session_id, "delete orders-2", OWNER)
    clock.advance(process([]).settings.lease_seconds + 1)
    assert process([]).sweep().looked == 1
    assert executions(ledger) == ["delete orders-1", "delete orders-2"], "ran again outside the journal"
