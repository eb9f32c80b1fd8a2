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


from resumable.local.permissions.calls import RECORDER, Call  # noqa: E402
from resumable.local.permissions.check import CALLS, read_calls  # noqa: E402

# Every AWS call a template function makes while the tests run is recorded (before any client is
# made), and kept in tests/aws_calls.txt, which the permission check holds the template's roles to.
RECORDER.install()
_CALLS_DIR = "RESUMABLE_RECORDED_CALLS_DIR"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or the only process): workers inherit it
        os.environ[_CALLS_DIR] = tempfile.mkdtemp(prefix="resumable-calls-")


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this run is the whole suite (no paths, keywords or marks chosen), so every call the
    functions make was made."""
    chosen = [a for a in config.args if os.path.abspath(a) != os.path.join(str(config.rootpath), "tests")]
    narrowed = config.option.keyword or config.option.markexpr or getattr(config.option, "lf", False)
    return not chosen and not narrowed


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Each process leaves its calls in the run's folder; the controller then compares them all with
    tests/aws_calls.txt: a call the file lacks fails the run, and so, when the whole suite ran and
    passed, does a call in the file that no test makes any more."""
    folder = os.environ.get(_CALLS_DIR)
    if folder is None:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    with open(os.path.join(folder, worker), "w") as made:
        made.write("\n".join(sorted(c.line() for c in RECORDER.calls)))
    if hasattr(session.config, "workerinput"):
        return
    recorded: set[Call] = set()
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as made:
            recorded |= {Call.parse(line) for line in made.read().splitlines() if line}
    kept = read_calls()
    new = sorted(recorded - kept)
    gone = sorted(kept - recorded) if _whole_suite(session.config) and exitstatus == 0 else []
    if os.environ.get("RECORD_CALLS") == "1" and (new or gone):
        # make calls: write what this run recorded (the permission check then judges it).
        CALLS.write_text(_HEADER + "\n".join(c.line() for c in sorted((kept | set(new)) - set(gone))) + "\n")
        return
    if new or gone:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"the functions made AWS calls {CALLS.name} does not list:", *(f"  {c.line()}" for c in new)]
        if gone:
            lines += [f"{CALLS.name} lists calls no test made:", *(f"  {c.line()}" for c in gone)]
        lines.append("make calls records them (then the permission check says whether the roles allow them)")
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_HEADER = """# Every AWS call a template function (or the state machine) makes, as the test suite records it:
# caller, IAM action, resource (named by the environment variable that configures it). The permission
# check (python -m resumable.local.permissions) holds the template's roles to these; make calls rewrites
# this file from a whole run of the suite.
"""


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
