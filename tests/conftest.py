"""Fixtures every tier shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def demo_database() -> Iterator[None]:
    """Every test sees the demo's in-memory database whole (its records are deleted by approvals)."""
    from resumable import demo_agents

    records = dict(demo_agents.DATABASE)
    yield
    demo_agents.DATABASE.clear()
    demo_agents.DATABASE.update(records)
    demo_agents.DELETIONS.clear()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected, the objects made so far (every module imported, every test) are
    set aside from the garbage collector, and it runs less often: a worker holds some 200,000 objects,
    which each full collection walked again (a tenth of the integration tier's CPU time)."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
