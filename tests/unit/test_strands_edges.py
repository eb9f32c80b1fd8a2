"""StrandsTree at the edges a review found: a tool's own question after its approval, the journal's
signals raised by a Strands tool, what runs after the approval hook, one agent in two places, a
sibling call failing while an approved one runs, edits of concurrent sub-agents, a retry of an edited
call, a restore that fails halfway, and a context-keeping sub-agent still paused when a new turn starts."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, ToolContext, tool
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookOrder, HookProvider, HookRegistry
from strands.middleware.stages import ExecuteToolStage

from resumable.exceptions import ActionFencedError, ActionOutcomeUnknownError, SnapshotError
from resumable.integrations.strands import ScriptedStrandsModel, StrandsTree, fencing_token
from resumable.runtime.approval import ApprovalPolicy
from resumable.runtime.invocation import FencingToken, Invocation
from resumable.runtime.session import FileSession
from tests.agents import RememberingJournal, calls, says

POLICY = ApprovalPolicy(require=("delete_*",), edits=("delete_*",))
RUNS: list[str] = []
RAISE: list[Exception] = []


@pytest.fixture(autouse=True)
def _clean() -> None:
    RUNS.clear()
    RAISE.clear()


@tool
def delete_record(name: str) -> str:
    """Delete a record.

    Args:
        name: The record.
    """
    if RAISE:
        assert fencing_token() is not None
        raise RAISE[0]
    RUNS.append(name)
    return f"deleted {name}"


@tool(context=True)
def delete_checked(name: str, tool_context: ToolContext) -> str:
    """Delete a record once a person says there is a backup.

    Args:
        name: The record.
    """
    backup = tool_context.interrupt("confirm_backup", reason="is there a backup?")
    RUNS.append(f"{name}:{backup}")
    return f"deleted {name}"


def _root(replies: list[dict[str, Any]], tools: list[Any], **options: Any) -> Agent:
    return Agent(
        name="orchestrator", model=ScriptedStrandsModel(replies), tools=tools, callback_handler=None, **options
    )


def _invocation(journal: Any = None) -> Invocation:
    return Invocation(agent_path=("orchestrator",), journal=journal if journal is not None else RememberingJournal())


def _approve(*interrupts: Any, **answer: Any) -> list[dict[str, Any]]:
    return [
        {"interruptResponse": {"interruptId": i.id, "response": {"decision": "approve", **answer}}} for i in interrupts
    ]


def _told(agent: Agent) -> list[str]:
    return [
        c["text"]
        for m in agent.messages
        for b in m["content"]
        if "toolResult" in b
        for c in b["toolResult"]["content"]
        if "text" in c
    ]


def test_an_approved_tool_asking_its_own_question_pauses_unrun_and_runs_once_when_answered() -> None:
    journal = RememberingJournal()
    tree = StrandsTree(
        _root([calls(("o-1", "delete_checked", {"name": "prod"})), says("done")], [delete_checked]),
        approval_policy=POLICY,
    )
    [approval] = tree.invoke("go", _invocation(journal)).interrupts
    asked = tree.invoke(_approve(approval), _invocation(journal))
    [question] = asked.interrupts
    assert (asked.stop_reason, question.name, RUNS, journal.results) == ("interrupt", "confirm_backup", [], {})
    done = tree.invoke([{"interruptResponse": {"interruptId": question.id, "response": "yes"}}], _invocation(journal))
    assert (done.stop_reason, RUNS, list(journal.results)) == ("end_turn", ["prod:yes"], [approval.id])


class ContractJournal:
    """Records what the service's journal makes of what ``perform`` raised."""

    def __init__(self) -> None:
        self.recorded: list[str] = []

    def run(self, action: Any, perform: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = perform(FencingToken(action.key, 1))
        except ActionFencedError:
            self.recorded.append("not run")
            raise
        except ActionOutcomeUnknownError:
            self.recorded.append("in doubt")
            return {"toolUseId": action.tool_use_id, "status": "error", "content": [{"text": "unknown"}]}
        self.recorded.append("finished")
        return result


@pytest.mark.parametrize(
    ("error", "recorded"),
    [(ActionFencedError("fence refused"), "not run"), (ActionOutcomeUnknownError("?"), "in doubt")],
)
def test_a_strands_tools_fenced_or_unknown_outcome_reaches_the_journal(error: Exception, recorded: str) -> None:
    tree = StrandsTree(
        _root([calls(("o-1", "delete_record", {"name": "prod"})), says("done")], [delete_record]),
        approval_policy=POLICY,
    )
    journal = ContractJournal()
    [approval] = tree.invoke("go", _invocation(journal)).interrupts
    RAISE.append(error)
    if isinstance(error, ActionFencedError):
        with pytest.raises(ActionFencedError):
            tree.invoke(_approve(approval), _invocation(journal))
    else:
        assert tree.invoke(_approve(approval), _invocation(journal)).stop_reason == "end_turn"
    assert journal.recorded == [recorded]


def test_tool_execution_middleware_is_refused_saying_why() -> None:
    root = _root([says("x")], [delete_record])
    root.add_middleware(ExecuteToolStage.Input, lambda context: context)
    with pytest.raises(ValueError, match=r"tool-execution middleware \(ExecuteToolStage\)"):
        StrandsTree(root)


def test_a_later_ordered_hook_that_changes_the_call_is_seen_by_the_approval_and_runs_journaled() -> None:
    def widen(event: BeforeToolCallEvent) -> None:
        event.tool_use = {**event.tool_use, "input": {"name": "*"}}

    root = _root([calls(("o-1", "delete_record", {"name": "prod"})), says("done")], [delete_record])
    root.add_hook(widen, BeforeToolCallEvent, order=HookOrder.SDK_LAST)
    tree = StrandsTree(root, approval_policy=POLICY)
    journal = RememberingJournal()
    [approval] = tree.invoke("go", _invocation(journal)).interrupts
    assert approval.reason["input"] == {"name": "*"}, "the person is asked about what would run"
    tree.invoke(_approve(approval), _invocation(journal))
    assert (RUNS, list(journal.results)) == (["*"], [approval.id])


def test_one_agent_behind_two_wrappers_or_in_two_trees_is_refused() -> None:
    admin = Agent(name="db_admin", model=ScriptedStrandsModel([]), callback_handler=None)
    with pytest.raises(ValueError, match="tool of two as_tool wrappers"):
        StrandsTree(_root([], [admin.as_tool(name="a"), admin.as_tool(name="b", preserve_context=True)]))
    root = _root([says("x")], [delete_record])
    StrandsTree(root)
    with pytest.raises(ValueError, match="already run by another StrandsTree: build the agents afresh"):
        StrandsTree(root)


class FailsOnDeleteOther(HookProvider):
    armed = threading.Event()

    def register_hooks(self, registry: HookRegistry, **_: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.check)

    def check(self, event: BeforeToolCallEvent) -> None:
        if self.armed.is_set() and event.tool_use["name"] == "delete_other":
            raise ValueError("the user's audit hook failed")


@tool
def delete_slowly(name: str) -> str:
    """Delete a record, slowly.

    Args:
        name: The record.
    """
    time.sleep(0.2)
    RUNS.append(name)
    return f"deleted {name}"


@tool
def delete_other(name: str) -> str:
    """Delete another record.

    Args:
        name: The record.
    """
    RUNS.append(f"other {name}")
    return "ok"


def test_a_sibling_call_failing_while_an_approved_one_runs_leaves_that_one_finished_and_raises_an_error() -> None:
    hook = FailsOnDeleteOther()
    root = _root(
        [calls(("o-1", "delete_slowly", {"name": "a"}), ("o-2", "delete_other", {"name": "b"})), says("done")],
        [delete_slowly, delete_other],
        hooks=[hook],
    )
    tree = StrandsTree(root, approval_policy=POLICY)
    journal = RememberingJournal()
    paused = tree.invoke("go", _invocation(journal))
    hook.armed.set()
    try:
        with pytest.raises(Exception) as raised:  # an Exception the service fails the turn with, not a BaseException
            tree.invoke(_approve(*paused.interrupts), _invocation(journal))
    finally:
        hook.armed.clear()
    assert isinstance(raised.value, Exception)
    assert RUNS == ["a"]
    assert [r["status"] for r in journal.results.values()] == ["success"], "the action that ran is recorded"


def _admin(name: str, target: str) -> Agent:
    return Agent(
        name=name,
        model=ScriptedStrandsModel([calls(("w-1", "delete_record", {"name": target})), says("ok")]),
        tools=[delete_record],
        callback_handler=None,
    )


def test_concurrent_sub_agents_each_hear_of_their_own_edit() -> None:
    a, b = _admin("admin_a", "a-db"), _admin("admin_b", "b-db")
    root = _root(
        [calls(("o-1", "admin_a", {"input": "x"}), ("o-2", "admin_b", {"input": "y"})), says("done")],
        [a.as_tool(name="admin_a"), b.as_tool(name="admin_b")],
    )
    tree = StrandsTree(root, approval_policy=POLICY)
    paused = tree.invoke("go", _invocation())
    edit = {"a-db": "a-replica", "b-db": "b-replica"}
    answers = [_approve(i, input={"name": edit[i.reason["input"]["name"]]})[0] for i in paused.interrupts]
    tree.invoke(answers, _invocation())
    assert sorted(RUNS) == ["a-replica", "b-replica"]
    for agent, edited in ((a, "a-replica"), (b, "b-replica")):
        notes = [t for t in _told(agent) if t.startswith("A person edited")]
        assert [edited in n for n in notes] == [True], notes


class RetryOnce(HookProvider):
    def __init__(self) -> None:
        self.retried = False

    def register_hooks(self, registry: HookRegistry, **_: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.after)

    def after(self, event: AfterToolCallEvent) -> None:
        if not self.retried:
            self.retried = True
            event.retry = True


def test_a_retried_edited_call_is_not_refused_and_runs_once() -> None:
    root = _root(
        [calls(("o-1", "delete_record", {"name": "prod"})), says("done")], [delete_record], hooks=[RetryOnce()]
    )
    tree = StrandsTree(root, approval_policy=POLICY)
    [approval] = tree.invoke("go", _invocation()).interrupts
    journal = RememberingJournal()
    tree.invoke(_approve(approval, input={"name": "replica"}), _invocation(journal))
    assert RUNS == ["replica"]
    assert not any("did NOT run" in t for t in _told(root))


def test_a_restore_that_fails_halfway_leaves_the_root_as_it_was() -> None:
    root = _root([calls(("o-1", "delete_record", {"name": "prod"})), says("done")], [delete_record])
    tree = StrandsTree(root, approval_policy=POLICY)
    tree.invoke("go", _invocation())
    stored = tree.snapshot()
    before = [dict(m) for m in root.messages]
    broken = {
        **stored,
        "root": {
            **stored["root"],
            "data": {
                **stored["root"]["data"],
                "messages": [{"role": "user", "content": [{"text": "INJECTED"}]}],
                "interrupt_state": {"nonsense": True},
            },
        },
    }
    with pytest.raises(SnapshotError):
        tree.restore(broken)
    assert root.messages == before


def test_a_context_keeping_sub_agent_still_paused_when_a_new_turn_starts_never_runs_that_call(tmp_path: Path) -> None:
    session = FileSession(tmp_path)

    def make() -> StrandsTree:
        admin = Agent(
            name="db_admin",
            model=ScriptedStrandsModel(
                [calls(("w-1", "delete_record", {"name": "one"})), says("one is not deleted"), says("nothing else")]
            ),
            tools=[delete_record],
            callback_handler=None,
        )
        root = _root(
            [
                calls(("o-1", "db_admin", {"input": "delete one"})),
                says("asked"),
                calls(("o-2", "db_admin", {"input": "?"})),
                says("turn two done"),
            ],
            [admin.as_tool(name="db_admin", preserve_context=True)],
        )
        return StrandsTree(root, session=session, approval_policy=POLICY)

    first = make()
    [question] = first.invoke("delete one", _invocation()).interrupts
    # That turn is canceled while it waits: the next turn starts from a fresh root, the sub-agent from its session.
    second = make()
    done = second.invoke("anything else?", _invocation())
    assert done.stop_reason == "end_turn"
    assert RUNS == []
    admin = second.agents["db_admin"]
    assert any("DISMISSED" in t for t in _told(admin)), "the paused call is closed as not run"
    assert question.id not in second.pending_interrupts()


def test_strands_warning_that_a_kept_sub_agent_cannot_resume_is_dropped_for_one_the_session_keeps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    admin = _admin("db_admin", "prod-db")
    root = _root(
        [calls(("o-1", "keeper", {"input": "x"})), says("done")], [admin.as_tool(name="keeper", preserve_context=True)]
    )
    tree = StrandsTree(root, session=FileSession(tmp_path), approval_policy=POLICY)
    with caplog.at_level("WARNING"):
        assert tree.invoke("go", _invocation()).stop_reason == "interrupt"
    assert not [r for r in caplog.records if "cannot be resumed after a restart" in r.getMessage()]


class Recording(ScriptedStrandsModel):
    """A scripted model that keeps every conversation it was sent."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        super().__init__(replies)
        self.sent: list[list[dict[str, Any]]] = []

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> Any:
        self.sent.append([dict(m) for m in messages])
        async for event in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield event


@tool
def look_up(name: str) -> str:
    """Look a record up.

    Args:
        name: The record.
    """
    RUNS.append(f"look {name}")
    return f"{name} exists"


def test_a_dismissed_paused_reply_keeps_its_finished_calls_results_and_the_roles_alternate(tmp_path: Path) -> None:
    session = FileSession(tmp_path)

    def make() -> tuple[StrandsTree, Recording]:
        model = Recording(
            [
                calls(("w-1", "look_up", {"name": "one"}), ("w-2", "delete_record", {"name": "one"})),
                says("second turn answer"),
            ]
        )
        admin = Agent(name="db_admin", model=model, tools=[delete_record, look_up], callback_handler=None)
        root = _root(
            [calls(("o-1", "db_admin", {"input": "look and delete one"})), says("turn two done")],
            [admin.as_tool(name="db_admin", preserve_context=True)],
        )
        return StrandsTree(root, session=session, approval_policy=POLICY), model

    first, _ = make()
    assert first.invoke("go", _invocation()).stop_reason == "interrupt"
    assert RUNS == ["look one"]
    second, model = make()  # that turn ended while it waited; a new turn starts
    assert second.invoke("again", _invocation()).stop_reason == "end_turn"
    [sent] = model.sent
    roles = [m["role"] for m in sent]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    results = {b["toolResult"]["toolUseId"]: b["toolResult"] for m in sent for b in m["content"] if "toolResult" in b}
    assert results["w-1"]["status"] == "success", "the look-up ran: its result stays"
    assert "DISMISSED" in results["w-2"]["content"][0]["text"]
    assert RUNS == ["look one"]


def test_a_factory_returning_a_subclass_of_a_strands_agent_is_run_as_a_strands_tree(tmp_path: Path) -> None:
    from resumable.service.agent_factory import AgentContext, build

    class MyAgent(Agent):
        pass

    context = AgentContext("s", "t", FileSession(tmp_path))
    with build(
        lambda _: MyAgent(name="o", model=ScriptedStrandsModel([says("hi")]), callback_handler=None), context
    ) as runtime:
        assert isinstance(runtime, StrandsTree)
