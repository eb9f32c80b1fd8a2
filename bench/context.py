"""Bounded context, for ``make bench`` (section 10): a 1,000-turn session with no conversation manager,
a sliding window and a summarising one; at turns 10, 100 and 1,000, the model's input at the turn's
last call (messages, bytes) and the snapshot's bytes. ``python -m bench.context`` runs it alone.

Each turn is a prompt, one tool call and an answer from RoundModel (tests/agents.py), which answers
from what the conversation holds: a ScriptedModel, indexed by the number of replies the conversation
holds, would replay earlier replies once messages are dropped. What is measured are counts, not times.
"""

from __future__ import annotations

import json
from typing import Any

from resumable import Agent, ConversationManager, SlidingWindow, Summarizing, tool
from tests.agents import RoundModel

CHECKPOINTS = (10, 100, 1000)


@tool
def look_up(query: str) -> str:
    """Look a record up.

    Args:
        query: What to look up.
    """
    return f"the record for '{query}': " + "lorem ipsum dolor sit amet " * 4


def _chatty(model: RoundModel, manager: ConversationManager | None) -> Agent:
    return Agent(name="chatty", model=model, tools=[look_up], conversation_manager=manager)


def bounded_context(turns: int = CHECKPOINTS[-1], at: tuple[int, ...] = CHECKPOINTS) -> list[dict[str, Any]]:
    """A session of ``turns`` turns with each manager. At each turn in ``at``: the model's input at the
    turn's last call (messages, bytes) and the snapshot's bytes; the agent is then rebuilt from that
    snapshot, as a new process would."""
    rows = []
    for manager in (None, SlidingWindow(max_messages=40), Summarizing(max_messages=40)):
        model = RoundModel(tool="look_up")
        agent = _chatty(model, manager)
        for turn in range(1, turns + 1):
            result = agent(f"turn {turn}: look up record {turn}")
            if result.stop_reason != "end_turn":
                raise AssertionError(f"turn {turn} with {manager!r} ended {result.stop_reason}")
            if turn not in at:
                continue
            text = json.dumps(agent.snapshot(), separators=(",", ":"))
            rows.append(
                {
                    "manager": repr(manager) if manager else "none (every message kept)",
                    "turn": turn,
                    "input_messages": len(model.last_input),
                    "input_bytes": len(json.dumps(model.last_input, separators=(",", ":")).encode()),
                    "snapshot_bytes": len(text.encode()),
                    "dropped_messages": agent.dropped_messages,
                    "summaries": model.summaries,
                }
            )
            agent = _chatty(model, manager)
            agent.restore(json.loads(text))
    return rows


def report(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "10. bounded context: a 1,000-turn session (each turn a prompt, a tool call and an answer); the model's",
        "    input at the turn's last call, and the snapshot (the agent is rebuilt from it at each turn shown)",
        f"    {'manager':46} {'turn':>5} {'messages':>8} {'input bytes':>11} {'snapshot bytes':>14} {'dropped':>7}"
        f" {'summaries':>9}",
    ]
    for row in rows:
        lines.append(
            f"    {row['manager']:46} {row['turn']:>5,} {row['input_messages']:>8,} {row['input_bytes']:>11,} "
            f"{row['snapshot_bytes']:>14,} {row['dropped_messages']:>7,} {row['summaries']:>9,}"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(report(bounded_context())))
