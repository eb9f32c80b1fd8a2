"""Agent factories for the service tests (``AGENT_FACTORY=tests.factories:<name>``).

Approved actions append a line to a ledger file named by ``RESUMABLE_TEST_LEDGER``, so executions
are counted across threads and processes alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resumable import Agent, ScriptedModel, tool
from resumable.service import AgentContext
from tests.agents import calls, says

LEDGER_ENV = "RESUMABLE_TEST_LEDGER"


def executions(ledger: Path) -> list[str]:
    return ledger.read_text().splitlines() if ledger.exists() else []


@tool(approval=True)
def delete_record(name: str) -> str:
    """Delete a database record."""
    with open(os.environ[LEDGER_ENV], "a") as ledger:
        ledger.write(f"delete {name}\n")
    return f"deleted {name}"


def _db_admin(name: str = "db_admin", session: Any = None, target: str = "prod-db") -> Agent:
    return Agent(
        name=name,
        model=ScriptedModel([calls(("w-1", "delete_record", {"name": target})), says(f"{target} is deleted")]),
        tools=[delete_record],
        session=session,
    )


def nested(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (ephemeral) -> delete_record (approval)."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[_db_admin().as_tool()],
    )


def nested_preserving(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (preserve_context=True, its own S3Session) -> delete_record."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[_db_admin(session=context.session).as_tool(preserve_context=True)],
    )


def fan_out(context: AgentContext) -> Agent:
    """orchestrator -> two db_admin calls in one step, deleting two records."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(("o-1", "admin_a", {"prompt": "delete a"}), ("o-2", "admin_b", {"prompt": "delete b"})),
                says("Both are gone."),
            ]
        ),
        tools=[_db_admin("admin_a", target="a-db").as_tool(), _db_admin("admin_b", target="b-db").as_tool()],
        # One after another: the fault-injection sweep crashes at the k-th AWS call, which concurrent calls
        # would interleave differently on every run (concurrency: test_concurrent_tools, test_races).
        max_concurrent_tools=1,
    )


def three_levels(context: AgentContext) -> Agent:
    """orchestrator -> manager -> db_admin -> delete_record."""
    manager = Agent(
        name="manager",
        model=ScriptedModel([calls(("m-1", "db_admin", {"prompt": "delete"})), says("manager: done")]),
        tools=[_db_admin().as_tool()],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "manager", {"prompt": "delete"})), says("all done")]),
        tools=[manager.as_tool()],
    )


def direct(context: AgentContext) -> Agent:
    """An orchestrator that asks for approval itself (no sub-agent)."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "delete_record", {"name": "prod-db"})), says("done")]),
        tools=[delete_record],
    )


def chatty(context: AgentContext) -> Agent:
    """No tools: every turn of the session is answered from the script, in conversation order."""
    return Agent(name="chatty", model=ScriptedModel([says("first answer"), says("second answer")]))


def nested_in_memory(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (preserve_context=True, no session: cannot resume after a rebuild)."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[_db_admin().as_tool(preserve_context=True)],
    )


# -- for tests/integration/test_cancel.py -------------------------------------------------------------

while_acting: Any = None
"""Called with the ``AgentContext`` while ``acting_on_itself``'s approved action runs (a test sets it)."""


def acting_on_itself(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (ephemeral) -> delete_record (approval). The approved action appends to
    the ledger and then calls ``while_acting(context)``: a test cancels the running turn from there."""

    @tool(approval=True, name="delete_record")
    def delete_record_and_call_back(name: str) -> str:
        """Delete a database record."""
        result = delete_record(name)
        if while_acting is not None:
            while_acting(context)
        return str(result)

    worker = Agent(
        name="db_admin",
        model=ScriptedModel([calls(("w-1", "delete_record", {"name": "prod-db"})), says("prod-db is deleted")]),
        tools=[delete_record_and_call_back],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[worker.as_tool()],
    )


# -- for tests/integration/test_bad_input.py ----------------------------------------------------------


def asks_a_question(context: AgentContext) -> Agent:
    """An orchestrator whose tool asks a person a free-form question: an interrupt that is not an approval,
    so any JSON answer is acceptable."""

    @tool(context=True)
    def choose_region(context: Any) -> str:
        """Ask a person which region to use."""
        return f"using {context.interrupt('region', reason={'question': 'which region?'})}"

    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "choose_region", {})), says("region chosen")]),
        tools=[choose_region],
    )


class _ThinkingModel:
    """A ScriptedModel that calls ``while_acting(context)`` while it "thinks", before each reply."""

    def __init__(self, context: AgentContext, replies: list[dict[str, Any]]) -> None:
        self.context = context
        self.script = ScriptedModel(replies)

    def converse(self, messages: list[dict[str, Any]], system_prompt: Any, tool_specs: Any) -> dict[str, Any]:
        if while_acting is not None:
            while_acting(self.context)
        return self.script.converse(messages, system_prompt, tool_specs)


def canceled_while_thinking(context: AgentContext) -> Agent:
    """orchestrator -> delete_record (approval), whose model calls ``while_acting(context)`` before each
    reply: a test cancels the turn while the model is thinking, so the run then pauses on the approval
    without passing another step boundary."""
    return Agent(
        name="orchestrator",
        model=_ThinkingModel(context, [calls(("o-1", "delete_record", {"name": "prod-db"})), says("done")]),
        tools=[delete_record],
    )


@tool(approval=True)
def bulk_delete(names: list[str]) -> str:
    """Delete many records."""
    with open(os.environ[LEDGER_ENV], "a") as ledger:
        ledger.write(f"bulk delete {len(names)}\n")
    return "x" * 200_000


def oversized(context: AgentContext) -> Agent:
    """An approval whose tool input, and a reply, far larger than a DynamoDB item may hold."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [calls(("o-1", "bulk_delete", {"names": [f"db-{n:06d}" for n in range(40_000)]})), says("y" * 500_000)]
        ),
        tools=[bulk_delete],
    )


@tool
def look_up(name: str) -> str:
    """Look a database record up (no approval needed)."""
    return f"{name} is a production database"


def looks_then_deletes(context: AgentContext) -> Agent:
    """orchestrator -> db_admin, which looks the record up, then deletes it (approval): two tool calls
    of db_admin's, so a run over budget checkpoints before the second."""
    db_admin = Agent(
        name="db_admin",
        model=ScriptedModel(
            [
                calls(("w-1", "look_up", {"name": "prod-db"})),
                calls(("w-2", "delete_record", {"name": "prod-db"})),
                says("prod-db is deleted"),
            ]
        ),
        tools=[look_up, delete_record],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[db_admin.as_tool()],
    )


# -- for tests/integration/test_outlived_lease.py ---------------------------------------------------------


def fenced(context: AgentContext) -> Agent:
    """orchestrator -> db_admin (ephemeral) -> delete_record (approval), whose approved action writes its
    fencing token to the ledger ("delete prod-db <lease>:<key>") and then calls ``while_acting(context)``."""

    @tool(approval=True, context=True, name="delete_record")
    def delete_record_fenced(name: str, context: Any) -> str:
        """Delete a database record."""
        with open(os.environ[LEDGER_ENV], "a") as ledger:
            ledger.write(f"delete {name} {context.fencing_token}\n")
        if while_acting is not None:
            while_acting(context)
        return f"deleted {name}"

    worker = Agent(
        name="db_admin",
        model=ScriptedModel([calls(("w-1", "delete_record", {"name": "prod-db"})), says("prod-db is deleted")]),
        tools=[delete_record_fenced],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[worker.as_tool()],
    )


# -- for tests/integration/test_edits.py --------------------------------------------------------------


@tool(approval=True, edits=True, name="delete_record")
def delete_record_editable(name: str) -> str:
    """Delete a database record (a person may edit which before approving).

    Args:
        name: The record to delete.
    """
    return str(delete_record(name))


def nested_editable(context: AgentContext) -> Agent:
    """orchestrator -> db_admin -> delete_record (approval, input editable)."""
    worker = Agent(
        name="db_admin",
        model=ScriptedModel([calls(("w-1", "delete_record", {"name": "prod-db"})), says("deleted")]),
        tools=[delete_record_editable],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete prod-db"})), says("The record is gone.")]),
        tools=[worker.as_tool()],
    )


def third_party(name: str = "drop_table") -> Callable[[AgentContext], Agent]:
    """A factory whose tool declares no approval: only a policy can guard it."""

    @tool(name=name)
    def undeclared(table: str) -> str:
        """Drop a table."""
        return str(delete_record(table))

    def build(context: AgentContext) -> Agent:
        return Agent(
            name="ops",
            model=ScriptedModel([calls(("t-1", name, {"table": "users"})), says("dropped")]),
            tools=[undeclared],
        )

    return build


# -- for tests/integration/test_retention.py --------------------------------------------------------------


def deletes_twice(context: AgentContext) -> Agent:
    """orchestrator -> db_admin, which deletes a-db, then b-db (each waits for its approval): once the
    first is approved and run, the turn waits again with a finished action in its journal."""
    db_admin = Agent(
        name="db_admin",
        model=ScriptedModel(
            [
                calls(("w-1", "delete_record", {"name": "a-db"})),
                calls(("w-2", "delete_record", {"name": "b-db"})),
                says("both are deleted"),
            ]
        ),
        tools=[delete_record],
    )
    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "db_admin", {"prompt": "delete a-db and b-db"})), says("Done.")]),
        tools=[db_admin.as_tool()],
    )


def nested_twice(context: AgentContext) -> Agent:
    """``nested`` for two turns of one session: each asks db_admin (ephemeral) to delete prod-db."""
    return Agent(
        name="orchestrator",
        model=ScriptedModel(
            [
                calls(("o-1", "db_admin", {"prompt": "delete prod-db"})),
                says("The record is gone."),
                calls(("o-2", "db_admin", {"prompt": "delete prod-db again"})),
                says("It is gone again."),
            ]
        ),
        tools=[_db_admin().as_tool()],
    )


def clerks(context: AgentContext) -> Agent:
    """orchestrator -> ten clerk calls in one step, each looking a record up (no approval): a turn of
    eleven records (the root and ten child turns), for up to 20 turns of one session."""

    def clerk() -> Agent:
        return Agent(
            name="clerk",
            model=ScriptedModel([calls(("c-1", "look_up", {"name": "a-db"})), says("found")]),
            tools=[look_up],
        )

    asks = calls(*[(f"o-{n}", "clerk", {"prompt": f"look {n} up"}) for n in range(10)])
    return Agent(
        name="orchestrator",
        model=ScriptedModel([reply for _ in range(20) for reply in (asks, says("all looked up"))]),
        tools=[clerk().as_tool()],
    )


# -- for tests/integration/test_context.py ------------------------------------------------------------


@tool(approval=True, risk="destructive", impact="Drops the database and every backup of it")
def drop_database(name: str) -> str:
    """Drop a database."""
    with open(os.environ[LEDGER_ENV], "a") as ledger:
        ledger.write(f"drop {name}\n")
    return f"dropped {name}"


@tool(approval=True, risk="low")
def clear_cache(name: str, reason: str = "") -> str:
    """Clear a cache."""
    return f"cleared {name}"


def explains(context: AgentContext) -> Agent:
    """An agent that says why before it drops a database (destructive)."""
    reply = calls(("x-1", "drop_database", {"name": "prod-db"}))
    reply["content"].insert(0, {"text": "The migration finished, so prod-db is no longer used."})
    return Agent(name="janitor", model=ScriptedModel([reply, says("dropped")]), tools=[drop_database])


def low_risk(context: AgentContext) -> Agent:
    """An agent whose call carries its own reason (a low-risk tool)."""
    return Agent(
        name="janitor",
        model=ScriptedModel([calls(("c-1", "clear_cache", {"name": "eu", "reason": "stale prices"})), says("ok")]),
        tools=[clear_cache],
    )


def approved_then_asks(context: AgentContext) -> Agent:
    """An approved action that, before doing anything, asks a person which region (an interrupt inside
    the approved call): once answered, it deletes in that region."""

    @tool(approval=True, context=True)
    def delete_in_region(name: str, context: Any) -> str:
        """Delete a database record in a region a person chooses."""
        region = context.interrupt("region", reason={"question": "which region?"})
        with open(os.environ[LEDGER_ENV], "a") as ledger:
            ledger.write(f"delete {name} in {region}\n")
        return f"deleted {name} in {region}"

    return Agent(
        name="orchestrator",
        model=ScriptedModel([calls(("o-1", "delete_in_region", {"name": "prod-db"})), says("Done.")]),
        tools=[delete_in_region],
    )


# -- for tests/e2e/test_app_settings.py --------------------------------------------------------------------


def reads_app_settings(context: AgentContext) -> Agent:
    """An agent whose factory reads an app setting (GREETING) and an app secret (orders-api-token), and
    whose approved tool uses the secret as a credential: its result says only whether it matched."""
    from resumable import app_secret, app_setting

    greeting, token = app_setting("GREETING"), app_secret("orders-api-token")
    level = app_setting("LEVEL", default="normal")

    @tool(approval=True)
    def call_orders_api(order_id: str) -> str:
        """Refund an order through the orders API, with its token."""
        authorized = token == os.environ.get("RESUMABLE_TEST_EXPECTED_TOKEN")
        return f"{greeting}: order {order_id} refunded ({level}; authorized: {authorized})"

    script = [calls(("s-1", "call_orders_api", {"order_id": "A-1"})), says(f"{greeting}, done")]
    return Agent(name="orders", model=ScriptedModel(script), tools=[call_orders_api])


def reads_a_missing_setting(context: AgentContext) -> Agent:
    from resumable import app_setting

    app_setting("NOT_THERE")
    raise AssertionError("unreachable")


def reads_a_listed_secret_that_is_not_there(context: AgentContext) -> Agent:
    from resumable import app_secret

    app_secret("gone-token")
    raise AssertionError("unreachable")


def reads_an_unlisted_secret(context: AgentContext) -> Agent:
    from resumable import app_secret

    app_secret("payroll-key")
    raise AssertionError("unreachable")


def openai_from_settings(context: AgentContext) -> Agent:
    """An agent on an OpenAI-compatible server: its base URL an app setting, its key an app secret."""
    from resumable import OpenAIModel, app_secret, app_setting

    model = OpenAIModel("gpt-4.1-mini", base_url=app_setting("OPENAI_BASE_URL"), api_key=app_secret("openai-api-key"))
    return Agent(name="chat", model=model)


# -- for tests/integration/test_grants.py -----------------------------------------------------------------


def deletes_each_turn(context: AgentContext) -> Agent:
    """An agent that deletes one record a turn, turn after turn of one session: orders-1, orders-2,
    users-1, orders-3, then orders-4 and orders-5 in one turn (two calls at once)."""
    script: list[dict[str, Any]] = []
    for n, name in enumerate(["orders-1", "orders-2", "users-1", "orders-3"], 1):
        script += [calls((f"d-{n}", "delete_record", {"name": name})), says(f"{name} is deleted")]
    script += [calls(("d-5", "delete_record", {"name": "orders-4"}), ("d-6", "delete_record", {"name": "orders-5"}))]
    script += [says("both are deleted")]
    return Agent(name="janitor", model=ScriptedModel(script), tools=[delete_record])
