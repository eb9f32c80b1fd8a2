"""The offline demo behind ``make demo``: an approval asked in one process, answered in another.

An orchestrator asks its ``db_admin`` sub-agent to delete the prod-db record; ``delete_record`` needs
a person's approval. Process 1 runs until the turn pauses and stores the orchestrator's snapshot.
Process 2 is a new interpreter: it rebuilds every agent from scratch, restores the snapshot, applies
the approval and completes the turn. The "database" is a JSON file, so the demo can show that the
action ran exactly once. No network and no credentials: the model is a ScriptedModel.

    python -m resumable.local.demo                 # both steps, each in its own process
    python -m resumable.local.demo pause DIR       # step 1 only
    python -m resumable.local.demo approve DIR     # step 2 only
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from resumable import Agent, ScriptedModel, tool


def build_agents(state_dir: Path) -> Agent:
    """The application's agents, built from nothing; only the database file lives outside them."""
    database = state_dir / "database.json"

    @tool(approval=True)
    def delete_record(name: str) -> str:
        """Delete a database record.

        Args:
            name: The name of the record to delete.
        """
        records = json.loads(database.read_text())
        records["deleted"].append(name)
        database.write_text(json.dumps(records))
        return f"record {name} deleted"

    db_admin = Agent(
        name="db_admin",
        model=ScriptedModel(
            [
                {
                    "role": "assistant",
                    "content": [
                        {"toolUse": {"toolUseId": "w-1", "name": "delete_record", "input": {"name": "prod-db"}}}
                    ],
                },
                {"role": "assistant", "content": [{"text": "The prod-db record is deleted."}]},
            ]
        ),
        tools=[delete_record],
        system_prompt="You administer the databases.",
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                {
                    "role": "assistant",
                    "content": [
                        {"toolUse": {"toolUseId": "o-1", "name": "db_admin", "input": {"prompt": "delete prod-db"}}}
                    ],
                },
                {"role": "assistant", "content": [{"text": "Done: db_admin deleted the prod-db record."}]},
            ]
        ),
        tools=[db_admin.as_tool()],
    )


def pause(state_dir: Path) -> None:
    (state_dir / "database.json").write_text(json.dumps({"deleted": []}))
    orchestrator = build_agents(state_dir)
    print("[process 1] orchestrator: 'delete the prod-db record'")
    result = orchestrator("delete the prod-db record")
    print(f"[process 1] stop_reason={result.stop_reason}")
    for interrupt in result.interrupts:
        print(f"[process 1] pending interrupt {interrupt.name!r}: {json.dumps(interrupt.reason)}")
        print(f"[process 1]   id (opaque) = {interrupt.id}")
    (state_dir / "snapshot.json").write_text(json.dumps(orchestrator.snapshot()))
    (state_dir / "pending.json").write_text(json.dumps([i.id for i in result.interrupts]))
    print("[process 1] snapshot stored; this process now exits and forgets everything")


def approve(state_dir: Path) -> None:
    orchestrator = build_agents(state_dir)
    orchestrator.restore(json.loads((state_dir / "snapshot.json").read_text()))
    pending: list[str] = json.loads((state_dir / "pending.json").read_text())
    print(
        f"[process 2] rebuilt every agent from scratch and restored the snapshot; approving {len(pending)} interrupt(s)"
    )
    answers: list[dict[str, Any]] = [
        {"interruptResponse": {"interruptId": i, "response": {"decision": "approve"}}} for i in pending
    ]
    result = orchestrator(answers)
    print(f"[process 2] stop_reason={result.stop_reason}: {result.text}")
    deleted = json.loads((state_dir / "database.json").read_text())["deleted"]
    runs = deleted.count("prod-db")
    print(f"[process 2] delete_record('prod-db') ran {runs} time(s)")
    if result.stop_reason != "end_turn" or runs != 1:
        raise SystemExit("demo FAILED: the approved action did not run exactly once")
    print("[process 2] the approved action ran exactly once")


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] in {"pause", "approve"}:
        (pause if argv[0] == "pause" else approve)(Path(argv[1]))
        return
    if argv:
        raise SystemExit(__doc__)
    with tempfile.TemporaryDirectory(prefix="resumable-demo-") as state_dir:
        for step in ("pause", "approve"):
            subprocess.run([sys.executable, "-m", "resumable.local.demo", step, state_dir], check=True)


if __name__ == "__main__":
    main(sys.argv[1:])
