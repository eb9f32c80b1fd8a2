"""Section 9 of ``make bench``: the runtime as agents use it in production.

- Concurrent tools: one model reply calling four tools of 0.25 s each (and sixteen), run on the
  default pool (``max_concurrent_tools=8``) and one after another (``max_concurrent_tools=1``);
  and through the service: one reply of four approved actions, resumed once all four are approved
  (each action's journal entries are written by its own thread).
- Optional providers' cold start: ``from resumable import Agent`` in a fresh interpreter, then with an
  ``OpenAIModel`` made (its SDK not yet loaded), with the openai SDK loaded (its first call), and
  with the MCP SDK loaded (an ``MCPClient`` starting): what an application pays only when it uses them.

Every time is a median over fresh runs (the machine is shared and noisy).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from resumable import Agent, ScriptedModel, tool
from resumable.clock import SystemClock
from resumable.config import Settings
from resumable.service import AgentContext, Service
from resumable.store import DynamoDBStore

ROOT = Path(__file__).resolve().parents[1]
TOOL_SECONDS = 0.25
APPROVE = {"decision": "approve"}


def _reply(calls: int, tool_name: str) -> dict[str, Any]:
    uses = [{"toolUse": {"toolUseId": f"t-{n}", "name": tool_name, "input": {"n": n}}} for n in range(calls)]
    return {"role": "assistant", "content": uses}


_DONE = {"role": "assistant", "content": [{"text": "done"}]}


@tool
def slow(n: int) -> str:
    """Wait a quarter of a second (an API call)."""
    time.sleep(TOOL_SECONDS)
    return f"call {n} done"


@tool(approval=True)
def slow_action(n: int) -> str:
    """An approved action that waits a quarter of a second."""
    time.sleep(TOOL_SECONDS)
    return f"action {n} done"


def _one_reply(calls: int, pool: int) -> float:
    agent = Agent(
        name="worker", model=ScriptedModel([_reply(calls, "slow"), _DONE]), tools=[slow], max_concurrent_tools=pool
    )
    started = time.perf_counter()
    assert agent("go").text == "done"
    return time.perf_counter() - started


def _approved_reply(settings: Settings, pool: int, session: str) -> float:
    def factory(_: AgentContext) -> Agent:
        return Agent(
            name="worker",
            model=ScriptedModel([_reply(4, "slow_action"), _DONE]),
            tools=[slow_action],
            max_concurrent_tools=pool,
        )

    service = Service(DynamoDBStore(settings), settings, SystemClock(), factory)
    view = service.start_turn(session, "go")
    *first, last = view.interactions
    for interaction in first:
        service.submit_approval(session, view.turn_id, interaction.request_id, APPROVE)
    started = time.perf_counter()
    done = service.submit_approval(session, view.turn_id, last.request_id, APPROVE)
    assert done.status == "completed", done.status
    return time.perf_counter() - started


def concurrency(settings: Settings, runs: int = 5) -> list[dict[str, Any]]:
    rows = []
    for calls in (4, 16):
        for pool in (8, 1):
            seconds = statistics.median(_one_reply(calls, pool) for _ in range(runs))
            rows.append({"case": f"{calls} tools of {TOOL_SECONDS} s, one reply", "pool": pool, "seconds": seconds})
    for pool in (8, 1):
        seconds = statistics.median(
            _approved_reply(settings, pool, f"bench-tools-{pool}-{n}-{time.time_ns()}") for n in range(runs)
        )
        rows.append({"case": f"4 approved actions of {TOOL_SECONDS} s, resumed", "pool": pool, "seconds": seconds})
    return rows


_IMPORTS = {
    # (``import resumable`` alone loads nothing until a name is used: the runtime's names are the baseline.)
    "from resumable import Agent": "from resumable import Agent",
    "+ OpenAIModel made (SDK not loaded)": (
        "from resumable import Agent, OpenAIModel\n"
        "OpenAIModel('gpt-4.1-mini', base_url='http://127.0.0.1:1/v1', api_key='x')"
    ),
    "+ openai SDK loaded (first call)": (
        "from resumable import Agent, OpenAIModel\n"
        "OpenAIModel('gpt-4.1-mini', base_url='http://127.0.0.1:1/v1', api_key='x').client"
    ),
    "+ MCP SDK loaded (MCPClient starts)": (
        "from resumable import Agent\nfrom resumable.runtime import mcp\nimport mcp as sdk, mcp.client.streamable_http"
    ),
}
_TIMED = """
import json, sys, time
started = time.perf_counter()
exec(compile(sys.argv[1], "<bench>", "exec"))
print(json.dumps({"ms": (time.perf_counter() - started) * 1000, "modules": len(sys.modules)}))
"""


def _fresh(code: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _TIMED, code], capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"an import run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def provider_imports(runs: int = 11) -> list[dict[str, Any]]:
    """Median time and module count of each step, in fresh interpreters, the steps interleaved."""
    for code in _IMPORTS.values():  # fill the bytecode caches
        _fresh(code)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in _IMPORTS}
    for _ in range(runs):
        for name, code in _IMPORTS.items():
            samples[name].append(_fresh(code))
    return [
        {
            "step": name,
            "ms": statistics.median(s["ms"] for s in runs_of),
            "modules": int(statistics.median(s["modules"] for s in runs_of)),
        }
        for name, runs_of in samples.items()
    ]


def agents(settings: Settings) -> dict[str, Any]:
    return {"concurrency": concurrency(settings), "provider_imports": provider_imports()}


def report(results: dict[str, Any]) -> list[str]:
    lines = ["9. agents in production: tools of one reply at once (pool 8: the default; 1: one after another)"]
    lines.append(f"   {'case':44} {'pool':>4} {'seconds':>8}")
    for row in results["concurrency"]:
        lines.append(f"   {row['case']:44} {row['pool']:>4} {row['seconds']:8.3f}")
    lines.append("   optional providers' cold start (fresh interpreters; paid only by an application that uses them)")
    lines.append(f"   {'step':44} {'ms':>6} {'modules':>8}")
    for row in results["provider_imports"]:
        lines.append(f"   {row['step']:44} {row['ms']:6.0f} {row['modules']:>8}")
    return lines
