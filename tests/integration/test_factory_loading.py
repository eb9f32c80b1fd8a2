"""The agent factory is imported when a use case that runs agents first needs it, and a factory that
cannot be loaded refuses that use case before anything is written; a read never loads it."""

from __future__ import annotations

import pytest

from resumable.config import Settings
from resumable.exceptions import NotFoundError
from resumable.service import Service
from resumable.service.agent_factory import LazyFactory
from resumable.store.dynamodb import DynamoDBStore
from tests.clock import FakeClock


def test_a_factory_that_cannot_be_loaded_refuses_a_start_with_nothing_written_and_reads_still_serve(
    aws: Settings, clock: FakeClock, store: DynamoDBStore
) -> None:
    settings = aws.model_copy(update={"agent_factory": "tests.factories:no_such_factory"})
    service = Service(DynamoDBStore(settings), settings, clock)  # the setting's factory, as a handler's
    with pytest.raises(NotFoundError):
        service.get_turn("factory-unloaded", "0" * 32)
    with pytest.raises(ValueError, match="cannot be loaded"):
        service.start_turn("factory-unloaded", "delete prod-db")
    assert store.get_session("factory-unloaded") is None


def test_the_factory_is_imported_once_on_first_use(aws: Settings, clock: FakeClock) -> None:
    settings = aws.model_copy(update={"agent_factory": "tests.factories:nested"})
    factory = Service(DynamoDBStore(settings), settings, clock).deps.factory
    assert isinstance(factory, LazyFactory)
    assert factory.load() is factory.load()
