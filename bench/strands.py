"""Strands agents, for ``make bench`` (section 11): a Strands Agents SDK tree under the service beside
the same tree in our runtime, and what the service adds to Strands. ``python -m bench.strands`` runs it
alone, on the embedded AWS.

The two trees are the tests' ``nested`` (orchestrator -> db_admin, an agent-as-tool that does not keep
its context -> delete_record, which needs an approval): tests.strands_factories:nested (Strands agents
on a scripted Strands model, run by ``StrandsTree``) and tests.factories:nested (our runtime's).

- Cold start: a fresh interpreter imports a handler (functions/start_turn/app.py, Lambda's init, traced
  as deployed) and then builds the agents once as its first request would (the factory loaded from its
  ``module:function`` and called with an ``AgentContext``): median ms and the modules imported.
- Layers: layers/layer.zip and layers/strands-layer.zip, zipped and unzipped ("not built" if absent).
- Per-operation overhead: start-turn (to waiting) and submit-approval (to completed) of each tree, the
  two interleaved run by run: medians, AWS calls, and the difference.
- Races: two resumes of one paused turn with the same approval at the same moment, ``RACES`` times.
  Strands alone: two rebuilt trees load the same stored snapshot (a plain Strands hook raises the
  ``approval`` interrupt and lets the call run on "approve") and resume. Under the service: two
  ``Service`` instances (rebuilt processes) submit the approval. Counted: races in which the approved
  action ran more than once.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import strands
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry

from bench.aws_calls import Recorder, forget_session, service_for
from bench.cold_start import TRACED, _environment
from resumable.config import Settings
from resumable.integrations.strands import ScriptedStrandsModel
from resumable.service.agent_factory import load_factory
from tests.agents import calls, says
from tests.factories import LEDGER_ENV, executions

ROOT = Path(__file__).resolve().parents[1]
HANDLER = ROOT / "functions" / "start_turn" / "app.py"
TREES = {"resumable": "tests.factories:nested", "strands": "tests.strands_factories:nested"}
LAYERS = (ROOT / "layers" / "layer.zip", ROOT / "layers" / "strands-layer.zip")
RACES = 40
APPROVE = {"decision": "approve"}


# -- cold start ------------------------------------------------------------------------------------------

_COLD = """
import importlib.util, json, sys, tempfile, time
started = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
imported = time.perf_counter()
from resumable.runtime.session import FileSession
from resumable.service.agent_factory import AgentContext, build, load_factory
with tempfile.TemporaryDirectory() as directory:
    with build(load_factory(sys.argv[2]), AgentContext("cold", "turn", FileSession(directory))):
        built = time.perf_counter()
print(json.dumps({"import": imported - started, "build": built - imported, "modules": len(sys.modules)}))
"""


def _cold(env: dict[str, str], factory: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _COLD, str(HANDLER), factory],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"a cold start of {factory} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cold_start(settings: Settings, runs: int = 7) -> list[dict[str, Any]]:
    """Median import of the handler, then of building each tree once, in fresh interpreters (the two
    interleaved; the first run fills the bytecode cache and is not counted)."""
    with tempfile.TemporaryDirectory(prefix="bytecode-") as cache:
        env = {**_environment(settings, cache), **TRACED, "AWS_LAMBDA_FUNCTION_NAME": "StartTurnFunction"}
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in TREES}
        for run in range(runs + 1):
            for name, factory in TREES.items() if run % 2 else reversed(TREES.items()):
                sample = _cold(env, factory)
                if run:
                    samples[name].append(sample)
    rows = []
    for name, factory in TREES.items():
        imported = statistics.median(s["import"] for s in samples[name]) * 1000
        built = statistics.median(s["build"] for s in samples[name]) * 1000
        total = statistics.median(s["import"] + s["build"] for s in samples[name]) * 1000
        modules = int(statistics.median(s["modules"] for s in samples[name]))
        rows.append(
            {
                "tree": name,
                "factory": factory,
                "import_ms": imported,
                "build_ms": built,
                "total_ms": total,
                "modules": modules,
                "runs": runs,
            }
        )
    return rows


# -- layers ----------------------------------------------------------------------------------------------


def layers() -> list[dict[str, Any]]:
    """Each layer's size, zipped and unzipped; ``built: False`` for one not built (nothing is built here)."""
    rows: list[dict[str, Any]] = []
    for archive in LAYERS:
        name = str(archive.relative_to(ROOT))
        if not archive.exists():
            rows.append({"layer": name, "built": False})
            continue
        with zipfile.ZipFile(archive) as opened:
            unzipped = sum(i.file_size for i in opened.infolist())
        rows.append({"layer": name, "built": True, "zipped_bytes": archive.stat().st_size, "unzipped_bytes": unzipped})
    return rows


# -- per-operation overhead ------------------------------------------------------------------------------


@contextmanager
def _ledger(path: Path) -> Iterator[Path]:
    """The approved actions of the trees append to ``path`` while this lasts."""
    before = os.environ.get(LEDGER_ENV)
    os.environ[LEDGER_ENV] = str(path)
    try:
        yield path
    finally:
        if before is None:
            del os.environ[LEDGER_ENV]
        else:
            os.environ[LEDGER_ENV] = before


def overhead(settings: Settings, runs: int = 20) -> list[dict[str, Any]]:
    """Median start-turn (to waiting) and submit-approval (to completed) of each tree, and its AWS calls."""
    recorders = {name: Recorder() for name in TREES}
    services = {name: service_for(settings, load_factory(factory), recorders[name]) for name, factory in TREES.items()}
    times: dict[tuple[str, str], list[float]] = {(n, op): [] for n in TREES for op in ("start", "submit")}
    made: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory() as directory, _ledger(Path(directory) / "ledger") as ledger:
        for run in range(runs + 1):  # the first run warms the clients up and is not counted
            for name in TREES if run % 2 else reversed(TREES):
                service, recorder = services[name], recorders[name]
                session = f"strands-{uuid.uuid4().hex[:12]}"
                recorder.take()
                started = time.perf_counter()
                turn = service.start_turn(session, "delete the prod-db record")
                paused = time.perf_counter()
                made[(name, "start")] = len(recorder.take())
                done = service.submit_approval(session, turn.turn_id, turn.interactions[0].request_id, dict(APPROVE))
                finished = time.perf_counter()
                made[(name, "submit")] = len(recorder.take())
                if (turn.status, done.status) != ("waiting", "completed"):
                    raise AssertionError(f"the {name} tree: {turn.status} then {done.status}")
                if not os.environ.get("BENCH_AWS"):
                    forget_session(settings, session)
                if run:
                    times[(name, "start")].append(paused - started)
                    times[(name, "submit")].append(finished - paused)
        ran = len(executions(ledger))
    if ran != (runs + 1) * len(TREES):
        raise AssertionError(f"{(runs + 1) * len(TREES)} approved turns ran their action {ran} times")
    rows = []
    for op, operation in (("start", "start-turn that pauses"), ("submit", "submit-approval that completes")):
        ours, theirs = (statistics.median(times[(n, op)]) * 1000 for n in TREES)
        rows.append(
            {
                "operation": operation,
                "resumable_ms": ours,
                "strands_ms": theirs,
                "difference_ms": theirs - ours,
                "resumable_calls": made[("resumable", op)],
                "strands_calls": made[("strands", op)],
                "runs": runs,
            }
        )
    return rows


# -- races: Strands alone, and under the service ---------------------------------------------------------


class _Approval(HookProvider):
    """What a Strands application writes for itself: ``delete_record`` asks a person through an
    ``approval`` interrupt and runs when the answer is "approve"."""

    def register_hooks(self, registry: HookRegistry, **_: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.ask)

    def ask(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] == "delete_record" and event.interrupt("approval", reason="delete?") != "approve":
            event.cancel_tool = "DENIED: the record was not deleted"


def _strands_alone(ran: list[str]) -> strands.Agent:
    """orchestrator -> db_admin (``as_tool(preserve_context=False)``) -> delete_record, built afresh;
    each deletion is appended to ``ran``."""

    @strands.tool
    def delete_record(name: str) -> str:
        """Delete a database record.

        Args:
            name: The record's name.
        """
        ran.append(name)
        return f"deleted {name}"

    admin = strands.Agent(
        name="db_admin",
        model=ScriptedStrandsModel([calls(("w-1", "delete_record", {"name": "prod-db"})), says("prod-db is deleted")]),
        tools=[delete_record],
        hooks=[_Approval()],
        callback_handler=None,
    )
    return strands.Agent(
        name="orchestrator",
        model=ScriptedStrandsModel([calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("It is gone.")]),
        tools=[admin.as_tool(name="db_admin", preserve_context=False)],
        callback_handler=None,
    )


def _at_once(calls: list[Callable[[], Any]]) -> None:
    """Run every call in a thread of its own, all released together; raise the first error."""
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def run(call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            call()
        except BaseException as error:  # raised below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _race_alone() -> int:
    """Times the action ran when two rebuilt trees resume one stored snapshot with the same approval."""
    ran: list[str] = []
    first = _strands_alone(ran)
    paused = first("delete the prod-db record")
    if paused.stop_reason != "interrupt":
        raise AssertionError(f"the Strands tree did not pause for the approval: {paused.stop_reason}")
    # Stored as text, as any store would hold it; each rebuilt tree loads its own copy (loading one dict
    # twice in one process would share the sub-agent's interrupted turn between the two trees).
    stored = json.dumps(first.take_snapshot(preset="session").to_dict())
    [interrupt] = paused.interrupts or []
    answer = [{"interruptResponse": {"interruptId": interrupt.id, "response": "approve"}}]
    rebuilt = []
    for _ in range(2):
        tree = _strands_alone(ran)
        tree.load_snapshot(strands.Snapshot.from_dict(json.loads(stored)))
        rebuilt.append(tree)
    _at_once([partial(tree, answer) for tree in rebuilt])
    return len(ran)


def _race_under_the_service(settings: Settings, directory: Path, race: int) -> int:
    """Times the action ran when two services (rebuilt processes) submit the same approval at once."""
    factory = load_factory(TREES["strands"])
    session = f"race-{uuid.uuid4().hex[:12]}"
    with _ledger(directory / f"race-{race}") as ledger:
        turn = service_for(settings, factory).start_turn(session, "delete the prod-db record")
        request = turn.interactions[0].request_id
        services = [service_for(settings, factory) for _ in range(2)]
        _at_once([partial(s.submit_approval, session, turn.turn_id, request, dict(APPROVE)) for s in services])
        final = services[0].get_turn(session, turn.turn_id)
        if final.status != "completed":
            raise AssertionError(f"race {race}: the turn ended {final.status}")
        ran = len(executions(ledger))
    if not os.environ.get("BENCH_AWS"):
        forget_session(settings, session)
    return ran


def races(settings: Settings, n: int = RACES) -> dict[str, Any]:
    """``n`` races each way: how many ran the approved action more than once, and how often it ran."""
    alone = [_race_alone() for _ in range(n)]
    with tempfile.TemporaryDirectory() as directory:
        served = [_race_under_the_service(settings, Path(directory), race) for race in range(n)]
    return {
        "races": n,
        "strands_alone": {"ran_more_than_once": sum(r > 1 for r in alone), "executions": sum(alone)},
        "under_the_service": {"ran_more_than_once": sum(r > 1 for r in served), "executions": sum(served)},
    }


# -- the section -----------------------------------------------------------------------------------------


def strands_agents(settings: Settings, runs: int = 20) -> dict[str, Any]:
    return {
        "cold_start": cold_start(settings),
        "layers": layers(),
        "overhead": overhead(settings, runs),
        "races": races(settings),
    }


def report(results: dict[str, Any]) -> list[str]:
    lines = ["11. Strands agents: tests.strands_factories:nested (StrandsTree) beside tests.factories:nested"]
    lines.append("    cold start: functions/start_turn/app.py imported, then the tree built once (fresh interpreters)")
    lines.append(f"    {'tree':10} {'import ms':>9} {'build ms':>8} {'total ms':>8} {'modules':>7}")
    for row in results["cold_start"]:
        lines.append(
            f"    {row['tree']:10} {row['import_ms']:9.0f} {row['build_ms']:8.0f} {row['total_ms']:8.0f}"
            f" {row['modules']:>7}"
        )
    for row in results["layers"]:
        if row["built"]:
            size = f"{row['zipped_bytes'] / 1e6:.2f} MB zipped, {row['unzipped_bytes'] / 1e6:.2f} MB unzipped"
        else:
            size = "not built"
        lines.append(f"    {row['layer']}: {size}")
    runs = results["overhead"][0]["runs"]
    lines.append(f"    per operation (median of {runs} runs, interleaved): ms and AWS calls")
    lines.append(f"    {'operation':32} {'resumable':>9} {'strands':>8} {'diff':>7} {'calls':>9}")
    for row in results["overhead"]:
        lines.append(
            f"    {row['operation']:32} {row['resumable_ms']:9.1f} {row['strands_ms']:8.1f} "
            f"{row['difference_ms']:+7.1f} {row['resumable_calls']:>4} / {row['strands_calls']}"
        )
    r = results["races"]
    alone, served = r["strands_alone"], r["under_the_service"]
    lines += [
        f"    two resumes of one paused turn with the same approval at the same moment, {r['races']} races:",
        f"      Strands alone:     the action ran more than once in {alone['ran_more_than_once']} of {r['races']} "
        f"races ({alone['executions']} runs)",
        f"      under the service: the action ran more than once in {served['ran_more_than_once']} of {r['races']} "
        f"races ({served['executions']} runs)",
    ]
    return lines


def main() -> int:
    from resumable.local import embedded_aws

    runs = min(int(os.environ.get("BENCH_RUNS", "20")), 20)
    started = time.perf_counter()
    with embedded_aws(table_name="bench", bucket_name="bench") as settings:
        results = strands_agents(settings, runs)
    print("\n".join(report(results)))
    print(f"    (section 11 in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
