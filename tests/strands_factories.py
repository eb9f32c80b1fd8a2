"""Strands agent trees for the service tests (``AGENT_FACTORY=tests.strands_factories:<name>``): the same
shapes as tests.factories, built of Strands Agents SDK agents on a scripted Strands model (offline).

The approved action appends to the ledger named by ``RESUMABLE_TEST_LEDGER``, as in tests.factories.
"""

from __future__ import annotations

import os
from typing import Any

from strands import Agent, tool
from strands.tools.executors import SequentialToolExecutor

from resumable.integrations.strands import ScriptedStrandsModel, StrandsTree
from resumable.runtime.approval import ApprovalPolicy
from resumable.service import AgentContext
from tests.agents import calls, says
from tests.factories import LEDGER_ENV

POLICY = ApprovalPolicy(require=("delete_*",), edits=("delete_*",))


@tool
def delete_record(name: str) -> str:
    """Delete a database record.

    Args:
        name: The record's name.
    """
    with open(os.environ[LEDGER_ENV], "a") as ledger:
        ledger.write(f"delete {name}\n")
    return f"deleted {name}"


def _agent(name: str, replies: list[dict[str, Any]], tools: list[Any], **options: Any) -> Agent:
    return Agent(name=name, model=ScriptedStrandsModel(replies), tools=tools, callback_handler=None, **options)


def _db_admin(name: str = "db_admin", target: str = "prod-db") -> Agent:
    return _agent(
        name, [calls(("w-1", "delete_record", {"name": target})), says(f"{target} is deleted")], [delete_record]
    )


def nested(context: AgentContext) -> StrandsTree:
    """orchestrator -> db_admin (preserve_context=False) -> delete_record (approval)."""
    root = _agent(
        "orchestrator",
        [calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("The record is gone.")],
        [_db_admin().as_tool(name="db_admin")],
    )
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


def nested_preserving(context: AgentContext) -> StrandsTree:
    """orchestrator -> db_admin (preserve_context=True, kept in the run's session) -> delete_record."""
    root = _agent(
        "orchestrator",
        [calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("The record is gone.")],
        [_db_admin().as_tool(name="db_admin", preserve_context=True)],
    )
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


def fan_out(context: AgentContext, **options: Any) -> StrandsTree:
    """orchestrator -> two db_admin calls in one reply (run concurrently, Strands' default), deleting two
    records."""
    root = _agent(
        "orchestrator",
        [
            calls(("o-1", "admin_a", {"input": "delete a"}), ("o-2", "admin_b", {"input": "delete b"})),
            says("Both are gone."),
        ],
        [_db_admin("admin_a", "a-db").as_tool(name="admin_a"), _db_admin("admin_b", "b-db").as_tool(name="admin_b")],
        **options,
    )
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


def fan_out_sequential(context: AgentContext) -> StrandsTree:
    """fan_out, its two calls one after the other: the fault-injection sweep crashes at the k-th AWS call,
    which concurrent calls would interleave differently on every run (as tests.factories.fan_out's
    max_concurrent_tools=1)."""
    return fan_out(context, tool_executor=SequentialToolExecutor())


def three_levels(context: AgentContext) -> StrandsTree:
    """orchestrator -> manager -> db_admin -> delete_record."""
    manager = _agent(
        "manager",
        [calls(("m-1", "db_admin", {"input": "delete"})), says("manager: done")],
        [_db_admin().as_tool(name="db_admin")],
    )
    root = _agent(
        "orchestrator", [calls(("o-1", "manager", {"input": "delete"})), says("all done")], [manager.as_tool()]
    )
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


def direct(context: AgentContext) -> StrandsTree:
    """An orchestrator that asks for approval itself (no sub-agent)."""
    root = _agent("orchestrator", [calls(("o-1", "delete_record", {"name": "prod-db"})), says("done")], [delete_record])
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


def bare(context: AgentContext) -> Agent:
    """The root strands.Agent itself, no StrandsTree: the service wraps it (the deployment's default
    approval policy decides which calls wait)."""
    return _agent(
        "orchestrator",
        [calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("The record is gone.")],
        [_db_admin().as_tool(name="db_admin")],
    )


# -- for the cancel test: the approved action cancels its own turn while it runs -----------------------------

while_acting: Any = None
"""Called with the ``AgentContext`` while ``acting_on_itself``'s approved action runs (a test sets it)."""


def acting_on_itself(context: AgentContext) -> StrandsTree:
    """nested, whose approved action calls ``while_acting(context)`` after it wrote the ledger."""

    @tool(name="delete_record")
    def delete_record_and_call_back(name: str) -> str:
        """Delete a database record.

        Args:
            name: The record's name.
        """
        result = delete_record(name)
        if while_acting is not None:
            while_acting(context)
        return str(result)

    admin = _agent(
        "db_admin",
        [
            calls(("w-1", "delete_record", {"name": "prod-db"}), ("w-2", "delete_record", {"name": "staging-db"})),
            says("deleted"),
        ],
        [delete_record_and_call_back],
        # One call after the other (Strands runs a reply's calls concurrently by default).
        tool_executor=SequentialToolExecutor(),
    )
    root = _agent(
        "orchestrator",
        [calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("The record is gone.")],
        [admin.as_tool(name="db_admin")],
    )
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


@tool
def look_up(name: str) -> str:
    """Look a database record up.

    Args:
        name: The record's name.
    """
    return f"{name} exists"


def looks_twice_then_deletes(context: AgentContext) -> StrandsTree:
    """orchestrator -> db_admin: two look-ups, then a delete (approval), one reply each: a run over its
    time budget checkpoints before the second look-up."""
    admin = _agent(
        "db_admin",
        [
            calls(("w-1", "look_up", {"name": "prod-db"})),
            calls(("w-2", "look_up", {"name": "prod-db"})),
            calls(("w-3", "delete_record", {"name": "prod-db"})),
            says("prod-db is deleted"),
        ],
        [look_up, delete_record],
    )
    root = _agent(
        "orchestrator",
        [calls(("o-1", "db_admin", {"input": "delete prod-db"})), says("The record is gone.")],
        [admin.as_tool(name="db_admin")],
    )
    return StrandsTree(root, session=context.session, approval_policy=POLICY)


def chatty(context: AgentContext) -> Agent:
    """No tools: every turn of the session is answered from the script, in conversation order."""
    return _agent("chatty", [says("first answer"), says("second answer")], [])


def explains(context: AgentContext) -> StrandsTree:
    """A Strands agent that says why before it calls delete_record (the approver is shown its words)."""
    reply = calls(("x-1", "delete_record", {"name": "prod-db"}))
    reply["content"].insert(0, {"text": "The migration finished, so prod-db is no longer used."})
    root = _agent("janitor", [reply, says("done")], [delete_record])
    return StrandsTree(root, session=context.session, approval_policy=POLICY)
