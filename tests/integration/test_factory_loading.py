"""The agent factory is imported when a use case that runs agents first needs it, and a factory that
cannot be loaded refuses that use case before anything is written; a read never loads it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from resumable.config import Settings
from resumable.exceptions import NotFoundError
from resumable.service import Service
from resumable.service.agent_factory import LazyFactory
from resumable.store.dynamodb import DynamoDBStore
from tests.clock import FakeClock

UNLOADABLE = "tests.factories:no_such_factory"


def unloadable(aws: Settings, clock: FakeClock) -> Service:
    """A service whose factory is the setting's, as a handler's is: one that cannot be loaded."""
    settings = aws.model_copy(update={"agent_factory": UNLOADABLE})
    return Service(DynamoDBStore(settings), settings, clock)


def test_reads_never_load_the_factory_and_a_start_is_refused_with_nothing_written(
    aws: Settings, clock: FakeClock, store: DynamoDBStore
) -> None:
    service = unloadable(aws, clock)
    with pytest.raises(NotFoundError):
        service.get_turn("factory-unloaded", "0" * 32)
    with pytest.raises(NotFoundError):
        service.list_interactions("factory-unloaded")
    service.inbox()
    factory = service.deps.factory
    assert isinstance(factory, LazyFactory) and factory._loaded is None
    with pytest.raises(ValueError, match="cannot be loaded"):
        service.start_turn("factory-unloaded", "delete prod-db")
    assert store.get_session("factory-unloaded") is None


@pytest.mark.parametrize("use_case", ["submit_approval", "recover", "sweep"])
def test_a_use_case_that_may_run_agents_is_refused_before_it_writes(
    use_case: str, aws: Settings, clock: FakeClock, make_service: Callable[..., Service], store: DynamoDBStore
) -> None:
    session_id = f"factory-unloaded-{use_case}"
    started = make_service().start_turn(session_id, "delete the prod-db record")
    (asked,) = started.interactions
    before = store.load_tree(session_id, started.turn_id)
    service = unloadable(aws, clock)
    calls: dict[str, Callable[[], object]] = {
        "submit_approval": lambda: service.submit_approval(
            session_id, started.turn_id, asked.request_id, {"decision": "approve"}
        ),
        "recover": lambda: service.recover(session_id, started.turn_id),
        "sweep": service.sweep,
    }
    with pytest.raises(ValueError, match="cannot be loaded"):
        calls[use_case]()
    assert store.load_tree(session_id, started.turn_id) == before  # the answer not recorded, the turn as it was


def test_a_sweep_that_hands_its_runs_to_another_function_never_loads_the_factory(
    aws: Settings, clock: FakeClock, make_service: Callable[..., Service], store: DynamoDBStore
) -> None:
    """The deployed Sweeper continues turns through SubmitApproval and has no app layer: a question past its
    expiry is still settled there, whatever the factory."""
    started = make_service().start_turn("factory-unloaded-sweep", "delete the prod-db record")
    continued: list[tuple[str, str]] = []
    service = unloadable(aws, clock).continued_by(lambda session_id, turn_id: continued.append((session_id, turn_id)))
    clock.advance(aws.approval_expiry_seconds + 1)
    service.sweep()
    factory = service.deps.factory
    assert isinstance(factory, LazyFactory) and factory._loaded is None
    settled = store.load_tree("factory-unloaded-sweep", started.turn_id)
    assert settled is not None and settled.root.status == "expired"
