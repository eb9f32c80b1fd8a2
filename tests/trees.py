"""The agent trees the benchmark and the soak run: a root that fans out to chains of sub-agents whose
last agent calls a tool, guarded by an approval or not. Deterministic models, no credentials. Each shape
is built of our agents (``factory``) or of Strands Agents SDK agents (``strands_factory``).

Every call of the tool is recorded per session (``ACTIONS``), so "ran exactly once" can be checked.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

import strands

from resumable import Agent, tool
from resumable.integrations.strands import ScriptedStrandsModel, StrandsTree
from resumable.runtime.approval import ApprovalPolicy
from resumable.service import AgentContext
from resumable.service.agent_factory import AgentFactory
from tests.agents import calls, says

ACTIONS: Counter[tuple[str, str]] = Counter()
"""(session id, action name) -> how many times the tool ran."""
_LOCK = threading.Lock()


def actions_of(session_id: str) -> dict[str, int]:
    with _LOCK:
        return {name: n for (session, name), n in ACTIONS.items() if session == session_id}


@dataclass(frozen=True)
class Shape:
    """``fan_out`` sub-agent calls the root makes in one step (0: the root calls the tool itself),
    each through a chain of ``depth`` sub-agents; the tool needs approval when ``guarded``."""

    fan_out: int = 1
    depth: int = 1
    guarded: bool = True

    def actions(self) -> list[str]:
        """The names of the actions one turn of this shape runs when everything is approved."""
        return ["task root"] if self.fan_out == 0 else [f"task {i}" for i in range(self.fan_out)]


class TreeModel:
    """Asks its one tool (``fan_out`` times for the root), then reports; the prompt names the task."""

    def __init__(self, tool_name: str, fan_out: int = 1, root: bool = False) -> None:
        self.tool_name = tool_name
        self.fan_out = fan_out
        self.root = root

    def converse(self, messages: list[dict[str, Any]], system_prompt: Any, tool_specs: Any) -> dict[str, Any]:
        replies = sum(1 for m in messages if m["role"] == "assistant")
        last = messages[-1]["content"]
        if any("toolResult" in block for block in last):
            return {"role": "assistant", "content": [{"text": f"done after {replies} replies"}]}
        prompt = " ".join(block["text"] for block in last if "text" in block)
        if self.root:
            tasks = [f"task {i}" for i in range(self.fan_out)] if self.tool_name != "act" else ["task root"]
        else:
            tasks = [prompt]
        key = "name" if self.tool_name == "act" else "prompt"
        uses = [
            {"toolUse": {"toolUseId": f"{self.tool_name}-{replies}-{n}", "name": self.tool_name, "input": {key: task}}}
            for n, task in enumerate(tasks)
        ]
        return {"role": "assistant", "content": uses}


def _record(context: AgentContext, name: str) -> str:
    with _LOCK:
        ACTIONS[(context.session_id, name)] += 1
    return f"{name}: done"


def factory(shape: Shape) -> AgentFactory:
    """The agent factory of ``shape``: every call builds the whole tree afresh."""

    def build(context: AgentContext) -> Agent:
        @tool(approval=shape.guarded)
        def act(name: str) -> str:
            """Do the task (an approved action when guarded).

            Args:
                name: The task.
            """
            return _record(context, name)

        if shape.fan_out == 0:
            return Agent(name="root", model=TreeModel("act", root=True), tools=[act])
        below: Agent = Agent(name=f"level{shape.depth}", model=TreeModel("act"), tools=[act])
        for level in range(shape.depth - 1, 0, -1):
            below = Agent(name=f"level{level}", model=TreeModel(below.name), tools=[below.as_tool()])
        return Agent(name="root", model=TreeModel(below.name, shape.fan_out, root=True), tools=[below.as_tool()])

    return build


def strands_factory(shape: Shape, preserve_context: bool = False) -> AgentFactory:
    """The agent factory of ``shape`` built of Strands agents: every call builds the whole tree afresh.

    The same tree as ``factory``'s, but for two things. Each of the root's ``fan_out`` calls goes down
    a chain of its own (agents ``level<d>-<i>``): Strands refuses a second call of an agent-as-tool
    while one runs (and runs a reply's calls concurrently), and a tree names each agent once. And each
    agent replays a script (``ScriptedStrandsModel``: its tool calls, then a text) where ``TreeModel``
    derives its reply from the conversation (the task from the prompt, ids and text from the reply
    count): every agent of these trees answers one prompt, known when the tree is built, and calls
    its tools in one reply, so each script has two replies and ids no other reply of the agent uses.
    The approval is the tree's ``ApprovalPolicy`` (``act`` required when guarded, exempt otherwise).
    Sub-agents are ``as_tool(preserve_context=...)``: False (Strands' default, as ours), or True, their
    state kept in the run's session (``factory`` has no such option: its one chain serves every branch,
    so a sub-agent keeping its context would keep one conversation for all of them).
    """
    policy = ApprovalPolicy(require=("act",)) if shape.guarded else ApprovalPolicy(exempt=("act",))

    def build(context: AgentContext) -> StrandsTree:
        @strands.tool
        def act(name: str) -> str:
            """Do the task (an approved action when guarded).

            Args:
                name: The task.
            """
            return _record(context, name)

        def agent(name: str, uses: list[tuple[str, str, dict[str, Any]]], tools: list[Any]) -> strands.Agent:
            replies = [calls(*uses), says(f"{name}: done")]
            return strands.Agent(name=name, model=ScriptedStrandsModel(replies), tools=tools, callback_handler=None)

        if shape.fan_out == 0:
            root = agent("root", [("root-0", "act", {"name": "task root"})], [act])
            return StrandsTree(root, session=context.session, approval_policy=policy)
        heads = []
        for i in range(shape.fan_out):
            leaf = f"level{shape.depth}-{i}"
            below = agent(leaf, [(f"{leaf}-0", "act", {"name": f"task {i}"})], [act])
            for level in range(shape.depth - 1, 0, -1):
                name = f"level{level}-{i}"
                uses = [(f"{name}-0", below.name, {"input": f"task {i}"})]
                below = agent(name, uses, [below.as_tool(preserve_context=preserve_context)])
            heads.append(below)
        root = agent(
            "root",
            [(f"root-{i}", head.name, {"input": f"task {i}"}) for i, head in enumerate(heads)],
            [head.as_tool(preserve_context=preserve_context) for head in heads],
        )
        return StrandsTree(root, session=context.session, approval_policy=policy)

    return build
