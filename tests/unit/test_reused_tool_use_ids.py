"""Providers that number every reply's tool calls from call_0: a toolUseId of an earlier reply names a
new call, and no answer ever reaches a call it was not asked for, across pauses and rebuilds."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from resumable import Agent, ScriptedModel, tool
from resumable.runtime.invocation import Invocation
from tests.agents import RememberingJournal, calls, says

IDS = ("call_0", "call_1", "call_2")


# A reply: the toolUseIds of its calls (distinct within the reply, reused across replies).
replies_strategy = st.lists(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True), min_size=1, max_size=5)


@given(reply_ids=replies_strategy, data=st.data())
@settings(max_examples=150, deadline=None)
def test_no_answer_ever_reaches_a_call_it_was_not_asked_for(reply_ids: list[list[str]], data: st.DataObject) -> None:
    ran: list[str] = []

    @tool(approval=True)
    def act(tag: str) -> str:
        """Do the tagged action."""
        ran.append(tag)
        return f"did {tag}"

    replies = [
        calls(*((tool_use_id, "act", {"tag": f"r{n}-{tool_use_id}"}) for tool_use_id in ids))
        for n, ids in enumerate(reply_ids)
    ]
    script = [*replies, says("finished")]
    journal = RememberingJournal()

    def build() -> Agent:
        return Agent(name="worker", model=ScriptedModel(script), tools=[act])

    def invocation() -> Invocation:
        return Invocation(agent_path=("worker",), journal=journal)

    agent = build()
    result = agent.invoke("go", invocation())
    approved: set[str] = set()
    denied: set[str] = set()
    asked: list[str] = []
    while result.stop_reason == "interrupt":
        answers = []
        for interrupt in result.interrupts:
            tag = interrupt.reason["input"]["tag"]
            asked.append(tag)
            decision = data.draw(st.sampled_from(["approve", "deny"]), label=tag)
            (approved if decision == "approve" else denied).add(tag)
            answers.append({"interruptResponse": {"interruptId": interrupt.id, "response": {"decision": decision}}})
        rebuilt = build()
        rebuilt.restore(json.loads(json.dumps(agent.snapshot())))
        agent = rebuilt
        result = agent.invoke(answers, invocation())

    every_call = [f"r{n}-{i}" for n, ids in enumerate(reply_ids) for i in ids]
    assert (result.stop_reason, result.text) == ("end_turn", "finished")
    assert sorted(asked) == sorted(every_call), "each call asked about exactly once"
    assert sorted(ran) == sorted(approved), "every approved call ran once, and nothing else ran"
    results = [
        block["toolResult"]
        for m in agent.messages
        if m["role"] == "user"
        for block in m["content"]
        if "toolResult" in block
    ]
    assert [r["content"][0]["text"] for r in results if r["status"] == "success"] == [
        f"did {tag}" for tag in every_call if tag in approved
    ], "each call's result is its own"
