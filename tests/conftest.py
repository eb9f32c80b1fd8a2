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
