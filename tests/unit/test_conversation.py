"""Conversation managers: a long session's model input and snapshot stay bounded; what a manager drops
never splits a tool use from its result, nor a paused step from its answer; the window survives a
rebuild; a summary is no reply of the turn, and one that fails drops nothing."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from resumable import Agent, FileSession, SlidingWindow, Summarizing, tool
from resumable.exceptions import ContextWindowOverflowError, ModelError, SnapshotError
from resumable.runtime.conversation import MAX_REDUCTIONS, SUMMARY_HEADER, ConversationManager
from resumable.runtime.hooks import AfterModelCall, BeforeModelCall, Hook
from tests.agents import RoundModel, approve, calls, deny, make_delete_record, says


@tool
def lookup(query: str) -> str:
    """Look a record up.

    Args:
        query: What to look up.
    """
    return f"record for {query}"


def is_prompt(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and not any("toolResult" in block for block in message["content"])


def ids(message: dict[str, Any], kind: str) -> list[str]:
    return [block[kind]["toolUseId"] for block in message["content"] if kind in block]


def assert_valid(messages: list[dict[str, Any]], *, paused: bool = False) -> None:
    """Valid Converse: it starts with a prompt, roles alternate, every toolResult answers a toolUse of
    the message before it and every toolUse is answered in the message after it (but the paused step's,
    whose results wait in the interrupt state)."""
    assert messages, "the conversation is empty"
    assert is_prompt(messages[0]), f"it starts with {messages[0]}"
    for before, after in itertools.pairwise(messages):
        assert before["role"] != after["role"], f"two {before['role']} messages in a row"
    for n, message in enumerate(messages):
        results = ids(message, "toolResult")
        if results:
            assert sorted(results) == sorted(ids(messages[n - 1], "toolUse")), f"message {n} answers no toolUse"
        uses = ids(message, "toolUse")
        if uses and n + 1 < len(messages):
            assert sorted(uses) == sorted(ids(messages[n + 1], "toolResult")), f"message {n}'s calls are unanswered"
        elif uses:
            assert paused, "the last message calls tools nobody answered"


class ModelInputs(Hook):
    """Checks every conversation the agent sends its model (valid, and within ``bound``)."""

    def __init__(self, within: Any = None) -> None:
        self.within = within
        self.sent: list[list[dict[str, Any]]] = []
        self.replies = 0

    def before_model_call(self, event: BeforeModelCall) -> None:
        assert_valid(event.messages)
        if self.within is not None:
            assert self.within(event.messages), f"{len(event.messages)} messages are out of bounds"
        self.sent.append(copy.deepcopy(event.messages))

    def after_model_call(self, event: AfterModelCall) -> None:
        self.replies += 1


def within_window(max_messages: int) -> Any:
    """A sliding window's bound: ``max_messages``, or the turn in progress alone (it is never cut)."""
    return lambda messages: len(messages) <= max_messages or not any(is_prompt(m) for m in messages[1:])


def chatty(manager: ConversationManager | None, model: Any = None, **kwargs: Any) -> Agent:
    return Agent(name="chatty", model=model or RoundModel(), tools=[lookup], conversation_manager=manager, **kwargs)


def run_turns(agent: Agent, turns: range) -> None:
    for n in turns:
        assert agent(f"look up record {n}").stop_reason == "end_turn"


# -- bounded model input -------------------------------------------------------------------------------


def test_a_sliding_window_keeps_every_model_input_within_max_messages_over_a_long_session() -> None:
    inputs = ModelInputs(within=lambda messages: len(messages) <= 6)
    agent = chatty(SlidingWindow(max_messages=6), hooks=[inputs])
    run_turns(agent, range(50))
    assert len(inputs.sent) == 100
    assert len(agent.messages) <= 7
    assert agent.dropped_messages == 50 * 4 - len(agent.messages)
    assert agent.messages[-1] == says("answer: record for look up record 49")


def test_without_a_manager_every_message_is_kept_and_sent() -> None:
    inputs = ModelInputs()
    agent = chatty(None, hooks=[inputs])
    run_turns(agent, range(10))
    assert [len(sent) for sent in inputs.sent[-2:]] == [37, 39]
    assert (len(agent.messages), agent.dropped_messages) == (40, 0)


def test_a_sliding_window_starts_at_a_prompt_never_between_a_tool_use_and_its_result() -> None:
    inputs = ModelInputs()
    agent = chatty(SlidingWindow(max_messages=6), hooks=[inputs])
    run_turns(agent, range(3))
    # Before the second call of a turn the conversation is [.. prompt, call, result]: 7 messages are
    # 1 too many, and a cut of exactly 1 would start at an assistant message; the window starts at
    # this turn's prompt instead.
    assert [len(sent) for sent in inputs.sent] == [1, 3, 5, 3, 5, 3]
    assert all(sent[0]["content"][0]["text"].startswith("look up record") for sent in inputs.sent)


def test_a_turn_longer_than_the_window_is_kept_whole() -> None:
    inputs = ModelInputs()
    agent = chatty(SlidingWindow(max_messages=2), hooks=[inputs])
    run_turns(agent, range(2))
    assert [len(sent) for sent in inputs.sent] == [1, 3, 1, 3]
    assert inputs.sent[-1][0] == {"role": "user", "content": [{"text": "look up record 1"}]}


def test_summarizing_keeps_every_model_input_within_max_messages_with_a_summary_first() -> None:
    inputs = ModelInputs(within=lambda messages: len(messages) <= 6)
    model = RoundModel()
    agent = chatty(Summarizing(max_messages=6, keep_messages=3), model=model, hooks=[inputs])
    run_turns(agent, range(30))
    assert model.summaries > 1
    assert agent.messages[0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert len(agent.messages) <= 7


# -- pauses ----------------------------------------------------------------------------------------------


def approving_agent(manager: ConversationManager | None, runs: list[str], **kwargs: Any) -> Agent:
    return Agent(
        name="ops",
        model=RoundModel(tool="delete_record", key="name"),
        tools=[make_delete_record(runs)],
        conversation_manager=manager,
        **kwargs,
    )


@pytest.mark.parametrize("manager", [SlidingWindow(max_messages=1), Summarizing(max_messages=3, keep_messages=2)])
def test_a_manager_never_changes_a_paused_agents_conversation(manager: ConversationManager) -> None:
    runs: list[str] = []
    agent = approving_agent(None, runs)
    for n in range(3):
        [question] = agent(f"record-{n}").interrupts
        agent([approve(question.id)])
    [question] = agent("record-3").interrupts
    before = agent.snapshot()

    manager.apply(agent)
    assert manager.reduce(agent) is False
    assert agent.snapshot() == before

    agent.conversation_manager = manager
    assert agent([approve(question.id)]).text == "answer: deleted record-3"
    assert runs == ["record-0", "record-1", "record-2", "record-3"]


def test_a_window_that_dropped_messages_resumes_a_paused_approval_after_a_rebuild_with_the_same_ids() -> None:
    runs: list[str] = []
    unmanaged = approving_agent(None, [])
    window = SlidingWindow(max_messages=4)
    stored = approving_agent(window, runs).snapshot()
    for n in range(6):
        agent = approving_agent(window, runs)
        agent.restore(stored)
        [question] = agent(f"record-{n}").interrupts
        [expected] = unmanaged(f"record-{n}").interrupts
        assert question.id == expected.id
        stored = agent.snapshot()  # the process that paused is gone; a new one answers

        rebuilt = approving_agent(window, runs)
        rebuilt.restore(stored)
        assert rebuilt([approve(question.id)]).text == f"answer: deleted record-{n}"
        unmanaged([approve(expected.id)])
        stored = rebuilt.snapshot()
    assert runs == [f"record-{n}" for n in range(6)]
    assert stored["dropped_messages"] > 0
    assert len(stored["messages"]) < len(unmanaged.messages)


def test_a_window_given_to_an_agent_with_a_long_history_keeps_only_the_turn_in_progress() -> None:
    runs: list[str] = []
    unmanaged = approving_agent(None, runs)
    for n in range(3):
        [question] = unmanaged(f"record-{n}").interrupts
        unmanaged([approve(question.id)])
    [question] = unmanaged("record-3").interrupts
    inputs = ModelInputs()
    managed = approving_agent(SlidingWindow(max_messages=2), runs, hooks=[inputs])
    managed.restore(unmanaged.snapshot())  # a snapshot written before the agent had a window

    assert managed([approve(question.id)]).text == "answer: deleted record-3"
    [sent] = inputs.sent
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0] == {"role": "user", "content": [{"text": "record-3"}]}
    assert managed.dropped_messages == 12


# -- a conversation longer than the model's context window -----------------------------------------------


class SmallContext:
    """RoundModel behind a context window of ``limit`` messages."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.model = RoundModel()
        self.refused = 0

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        if len(messages) > self.limit:
            self.refused += 1
            raise ContextWindowOverflowError(f"{len(messages)} messages do not fit in {self.limit}")
        return self.model.converse(messages, system_prompt, tool_specs)


def test_on_an_overflow_the_manager_drops_more_and_the_model_is_asked_again() -> None:
    model = SmallContext(limit=9)
    inputs = ModelInputs()
    agent = chatty(SlidingWindow(max_messages=100), model=model, hooks=[inputs])
    run_turns(agent, range(10))
    assert model.refused > 0
    assert agent.dropped_messages > 0
    assert inputs.replies == agent.cycle == 20
    assert agent.messages[-1] == says("answer: record for look up record 9")


def test_without_a_manager_an_overflow_fails_the_turn_saying_nothing_was_dropped() -> None:
    agent = chatty(None, model=SmallContext(limit=6))
    run_turns(agent, range(1))
    with pytest.raises(ContextWindowOverflowError, match="no conversation manager, so nothing was dropped") as caught:
        agent("look up record 1")
    assert "5 messages do not fit in 6" not in str(caught.value)
    assert "7 messages do not fit in 6" in str(caught.value)
    assert len(agent.messages) == 7


def test_an_overflow_the_manager_cannot_relieve_fails_the_turn_saying_so() -> None:
    agent = chatty(SlidingWindow(max_messages=10), model=SmallContext(limit=2))
    with pytest.raises(ContextWindowOverflowError, match="cannot drop more of it") as caught:
        agent("look up record 0")
    assert "no reply was recorded" in str(caught.value)
    assert (len(agent.messages), agent.dropped_messages) == (3, 0)


def test_the_model_is_asked_again_at_most_max_reductions_times() -> None:
    model = SmallContext(limit=1000)
    agent = chatty(SlidingWindow(max_messages=1000), model=model)
    run_turns(agent, range(64))
    model.limit = 0
    with pytest.raises(ContextWindowOverflowError, match=f"dropped more {MAX_REDUCTIONS} times"):
        agent("look up record 64")
    assert model.refused == 1 + MAX_REDUCTIONS
    assert len(agent.messages) < 64 * 4 / 2**MAX_REDUCTIONS + 4


# -- snapshots -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("manager", [SlidingWindow(max_messages=5), Summarizing(max_messages=5, keep_messages=2)])
def test_an_agent_rebuilt_from_its_snapshot_every_turn_continues_with_the_same_window(
    manager: ConversationManager,
) -> None:
    kept = chatty(manager)
    stored = chatty(manager).snapshot()
    for n in range(20):
        rebuilt = chatty(manager)
        rebuilt.restore(stored)
        rebuilt(f"look up record {n}")
        stored = rebuilt.snapshot()
        kept(f"look up record {n}")
        assert stored == kept.snapshot()
    assert stored["schema_version"] == "1.2"
    assert stored["dropped_messages"] == kept.dropped_messages > 0


def test_snapshots_of_schema_1_0_and_1_1_load_with_nothing_dropped() -> None:
    agent = chatty(None)
    run_turns(agent, range(2))
    current = agent.snapshot()
    older = {k: v for k, v in current.items() if k != "dropped_messages"} | {"schema_version": "1.1"}
    oldest = {k: v for k, v in older.items() if k != "cycle"} | {"schema_version": "1.0"}
    for snapshot in (older, oldest):
        fresh = chatty(SlidingWindow(max_messages=3))
        fresh.restore(snapshot)
        assert (fresh.messages, fresh.cycle, fresh.dropped_messages) == (agent.messages, 4, 0)
        fresh("look up record 2")
        assert fresh.dropped_messages == 8


@pytest.mark.parametrize(
    ("version", "change", "problem"),
    [
        ("1.2", {"dropped_messages": None}, "'1.2' needs 'dropped_messages'"),
        ("1.1", {"dropped_messages": 3}, "'1.1' has no 'dropped_messages'"),
        ("1.2", {"dropped_messages": -1}, "greater than or equal to 0"),
    ],
)
def test_a_snapshot_whose_dropped_messages_do_not_match_its_version_is_refused_and_changes_nothing(
    version: str, change: dict[str, Any], problem: str
) -> None:
    agent = chatty(SlidingWindow(max_messages=3))
    run_turns(agent, range(2))
    before = agent.snapshot()
    with pytest.raises(SnapshotError, match="nothing was restored") as caught:
        agent.restore(before | {"schema_version": version} | change)
    assert problem in str(caught.value)
    assert agent.snapshot() == before


def test_reset_forgets_the_dropped_messages_with_the_conversation() -> None:
    agent = chatty(SlidingWindow(max_messages=3))
    run_turns(agent, range(3))
    agent.reset()
    assert (agent.messages, agent.dropped_messages, agent.cycle) == ([], 0, 0)


# -- summaries -------------------------------------------------------------------------------------------


class Summarizer:
    """Writes summaries that quote the start of what they summarise; records every request."""

    def __init__(self, fails: ModelError | None = None, reply: dict[str, Any] | None = None) -> None:
        self.requests: list[tuple[list[dict[str, Any]], str | None, list[dict[str, Any]]]] = []
        self.fails = fails
        self.reply = reply

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self.requests.append((messages, system_prompt, tool_specs))
        if self.fails is not None:
            raise self.fails
        return self.reply or says(f"summary {len(self.requests)}")


def test_a_summary_starts_the_conversation_and_the_next_summary_summarises_it_with_what_follows() -> None:
    summarizer = Summarizer()
    agent = chatty(Summarizing(max_messages=6, keep_messages=3, model=summarizer))
    run_turns(agent, range(4))
    assert len(summarizer.requests) >= 2
    assert agent.messages[0] == {
        "role": "user",
        "content": [{"text": f"{SUMMARY_HEADER}summary {len(summarizer.requests)}"}],
    }
    [first], _, tool_specs = summarizer.requests[0]
    assert tool_specs == []
    assert "User: look up record 0" in first["content"][0]["text"]
    assert '[called the tool lookup with {"query": "look up record 0"}]' in first["content"][0]["text"]
    [second], _, _ = summarizer.requests[1]
    assert f"User: {SUMMARY_HEADER}summary 1" in second["content"][0]["text"]


def test_a_summary_is_asked_of_the_agents_own_model_unless_another_is_given() -> None:
    own = RoundModel()
    run_turns(chatty(Summarizing(max_messages=4), model=own), range(5))
    assert own.summaries > 0

    own, other = RoundModel(), Summarizer()
    run_turns(chatty(Summarizing(max_messages=4, model=other), model=own), range(5))
    assert (own.summaries, len(other.requests) > 0) == (0, True)


def test_a_summary_is_no_reply_of_the_turn() -> None:
    inputs = ModelInputs()
    model = RoundModel()
    agent = chatty(Summarizing(max_messages=4), model=model, hooks=[inputs])
    run_turns(agent, range(10))
    assert model.summaries > 0
    assert agent.cycle == inputs.replies == len(inputs.sent) == 20


@pytest.mark.parametrize(
    ("summarizer", "said"),
    [
        (Summarizer(fails=ModelError("the service is down")), "the service is down"),
        (Summarizer(reply=calls(("x", "lookup", {}))), "holds no text"),
        (Summarizer(reply={"role": "user", "content": []}), "not a Converse assistant message"),
    ],
)
def test_a_summary_that_fails_fails_the_turn_and_drops_nothing(
    summarizer: Summarizer, said: str, tmp_path: Path
) -> None:
    agent = chatty(Summarizing(max_messages=4, model=summarizer), session=FileSession(tmp_path))
    run_turns(agent, range(1))
    with pytest.raises(ModelError, match="could not summarise the 3 oldest messages, so nothing was dropped") as caught:
        agent("look up record 1")
    assert said in str(caught.value)
    assert len(agent.messages) == 5
    assert (agent.dropped_messages, agent.cycle) == (0, 2)
    assert FileSession(tmp_path).load("chatty") == agent.snapshot()


# -- configuration ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: SlidingWindow(max_messages=0),
        lambda: Summarizing(max_messages=4, keep_messages=4),
        lambda: Summarizing(max_messages=4, keep_messages=1),
        lambda: Summarizing(max_messages=2),
        lambda: chatty(object()),  # type: ignore[arg-type]
    ],
    ids=["empty window", "keep all", "keep one", "too small for a summary", "not a manager"],
)
def test_a_manager_that_cannot_keep_its_bound_is_refused_when_it_is_made(build: Any) -> None:
    with pytest.raises(ValueError, match=r"max_messages|conversation manager"):
        build()


# -- the property: every management step leaves a valid conversation within bounds ------------------------


class QueueModel:
    """Replies in order, whatever the conversation holds; a request for a summary gets one."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return says("summary") if not tool_specs else self.replies.pop(0)


# A call: "lookup", or "approve"/"deny" for a call that waits for a person who answers so.
rounds = st.lists(st.lists(st.sampled_from(["lookup", "approve", "deny"]), min_size=1, max_size=3), max_size=3)
managers = st.one_of(
    st.builds(SlidingWindow, max_messages=st.integers(1, 8)),
    st.integers(3, 8).flatmap(
        lambda most: st.builds(Summarizing, max_messages=st.just(most), keep_messages=st.integers(2, most - 1))
    ),
)


def replies_for(turns: list[list[list[str]]]) -> list[dict[str, Any]]:
    replies = []
    for n, turn in enumerate(turns):
        for round_ in turn:
            replies.append(
                calls(
                    *[
                        (f"call_{c}", "lookup", {"query": f"{n}"})
                        if kind == "lookup"
                        else (f"call_{c}", "delete_record", {"name": f"{kind}-{n}-{c}"})
                        for c, kind in enumerate(round_)
                    ]
                )
            )
        replies.append(says(f"turn {n} done"))
    return replies


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manager=managers, turns=st.lists(rounds, min_size=1, max_size=8), rebuilds=st.lists(st.booleans()))
def test_after_every_management_step_the_conversation_is_valid_and_within_bounds(
    manager: ConversationManager, turns: list[list[list[str]]], rebuilds: list[bool]
) -> None:
    if isinstance(manager, SlidingWindow):
        inputs = ModelInputs(within=within_window(manager.max_messages))
    else:
        inputs = ModelInputs(within=lambda messages: len(messages) <= manager.max_messages)
    model = QueueModel(replies_for(turns))
    runs: list[str] = []

    def build() -> Agent:
        return Agent(
            name="ops",
            model=model,
            tools=[lookup, make_delete_record(runs)],
            conversation_manager=manager,
            hooks=[inputs],
            max_steps=10,
        )

    agent = build()
    for n in range(len(turns)):
        result = agent(f"turn {n}")
        while result.stop_reason == "interrupt":
            assert_valid(agent.messages, paused=True)
            paused = agent.snapshot()
            manager.apply(agent)
            assert not manager.reduce(agent)
            assert agent.snapshot() == paused
            event("paused")
            if rebuilds and rebuilds.pop():
                event("rebuilt while paused")
                agent = build()
                agent.restore(paused)
            answers = [
                approve(i.id) if i.reason["input"]["name"].startswith("approve") else deny(i.id)
                for i in result.interrupts
            ]
            result = agent(answers)
        assert result.stop_reason == "end_turn"
        assert_valid(agent.messages)
    expected = [
        f"approve-{n}-{c}" for n, turn in enumerate(turns) for r in turn for c, k in enumerate(r) if k == "approve"
    ]
    assert sorted(runs) == sorted(expected)
    assert model.replies == []
    event(f"{type(manager).__name__} dropped messages" if agent.dropped_messages else "nothing dropped")
