"""Fixtures every tier shares."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# No test may depend on how much work fits in a time window: a busy machine (CI, two make tests side
# by side) runs the same examples, only slower. Hypothesis's per-example deadline and its too-slow
# health check are such timings, so they are off for every property test here.
settings.register_profile("busy-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("busy-machine")

# Where a local run the tests start says where it serves: never the project's own file, which a
# developer's make run beside the tests writes (and the resumable command reads).
os.environ["RESUMABLE_LOCAL_STATE"] = os.path.join(tempfile.mkdtemp(prefix="resumable-tests-"), "local-run.json")


# Every AWS call a template function makes is recorded, and held to tests/aws_calls.txt.
pytest_plugins = ["tests.recorded_calls"]


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


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Once the run is over, everything left is set aside from the garbage collector too: the
    interpreter's exit collects garbage again and again as it clears each module, and over what a
    worker made in a whole run (its embedded AWS, every test's tables) that took seconds, which the
    run waits for. (The objects are still freed; only cycles of garbage are left to the end.)"""
    import gc

    gc.freeze()
