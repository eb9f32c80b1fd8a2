"""Fixtures every tier shares."""

from __future__ import annotations

import atexit
import gc
import os
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests import botocore_reuse, embedded_signing

# No test may depend on how much work fits in a time window: a busy machine (CI, two make tests side
# by side) runs the same examples, only slower. Hypothesis's per-example deadline and its too-slow
# health check are such timings, so they are off for every property test here.
settings.register_profile("busy-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("busy-machine")

# Where a local run the tests start says where it serves: never the project's own file, which a
# developer's make run beside the tests writes (and the resumable command reads). A folder of each test
# process's own, removed as it exits.
_LOCAL_STATE = tempfile.TemporaryDirectory(prefix="resumable-tests-")
os.environ["RESUMABLE_LOCAL_STATE"] = os.path.join(_LOCAL_STATE.name, "local-run.json")


# The demo's agents, asked for by name: where the project has an app/ of its own (docs/your-agent.md), a
# local run the tests start still serves the demo, in its own process, as the tests expect.
os.environ.setdefault("AGENT_FACTORY", "resumable.demo_agents:build_demo_agents")


# Every request checked against the service's model before it is sent, as botocore does by default
# (resumable's clients do not, in Lambda: AWS checks again), since the embedded AWS accepts some that
# AWS refuses; the processes the tests start inherit it.
os.environ.setdefault("RESUMABLE_CHECK_REQUESTS", "1")


# botocore clients of one service share their model, class and endpoint rules in the tests' processes
# (tests/botocore_reuse.py: each client keeps its own events, endpoint and connections).
botocore_reuse.apply()


# A request answered in-process by an embedded AWS is not signed, only given a signature's form
# (tests/embedded_signing.py: moto checks none); every other request is signed as botocore signs it.
embedded_signing.apply()


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
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def pytest_unconfigure(config: pytest.Config) -> None:
    """As the process exits, once pytest is done (its last garbage collections have reported what they
    found), everything left is set aside from the garbage collector: the interpreter's exit would
    otherwise collect again and again as it clears each module, which over what a worker made in a
    whole run (its embedded AWS, every test's tables) took seconds the run waited for. Objects still
    in a reference cycle then are never finalized (no ``__del__`` runs); the process's end returns
    their memory and files."""
    atexit.register(gc.freeze)
