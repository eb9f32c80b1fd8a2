"""Conversation managers: which messages of an agent's conversation are kept, so that a long session
outgrows neither its model's context window nor its snapshot.

An agent keeps every message unless it is given a manager (``Agent(conversation_manager=...)``):

- ``SlidingWindow(max_messages)`` drops the oldest turns, keeping at most ``max_messages`` messages;
- ``Summarizing(max_messages, keep_messages, model)`` replaces the oldest messages with a summary that
  a model writes (the agent's own unless one is given), kept as the first message; when it runs again,
  the earlier summary is summarised with the rest.

Before every model call the agent asks its manager to bring the conversation within bounds
(``apply``); when the model still finds it too long (``ContextWindowOverflowError``), the agent asks
the manager to drop about half of it (``reduce``) and calls the model again, at most
``MAX_REDUCTIONS`` times for one reply (``reduce_for`` says why the turn fails when it cannot).

Whatever a manager drops, the conversation stays valid Converse: it starts with a user message that
holds no toolResult, roles alternate, and a toolUse and its toolResult are kept or dropped together.
A manager never changes the conversation of a paused agent (its paused step's toolUse message, its
stored results and its interrupts stay as they are), so an interrupt is never split from its answer;
and interrupt ids are numbered by the agent's ``cycle``, not by positions in the conversation, so
dropping messages never changes one.

A manager is configuration, built with the agent in code, and keeps no state of its own (one manager
may serve several agents): what it did is in the conversation (a summary is a message of it) and in
``Agent.dropped_messages``, which the agent's snapshot keeps.

``ScriptedModel`` picks its reply by the number of assistant messages in the conversation, so with a
manager that drops messages it replays earlier replies: test managed agents with a model that
answers from what the conversation holds.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from resumable.exceptions import ContextWindowOverflowError, ModelError
from resumable.runtime.models import Model, check_assistant_message

if TYPE_CHECKING:
    from resumable.runtime.agent import Agent

__all__ = ["ConversationManager", "SlidingWindow", "Summarizing"]

logger = logging.getLogger(__name__)

SUMMARY_PROMPT = (
    "You summarise the earlier part of a conversation between a user and an AI agent that uses tools, "
    "for the agent, which continues the conversation without seeing that part. Keep what the user asked "
    "for, what was decided, the facts learned, every action taken with its outcome (approved, denied, "
    "failed) and whatever is still open; an earlier summary in it is part of what you summarise. Write "
    "plain, concise text in the third person."
)
SUMMARY_HEADER = "Summary of the earlier conversation (its messages were dropped to keep it short):\n\n"
MAX_REDUCTIONS = 3
"""How many times, for one reply, the conversation manager drops more after the model found the
conversation longer than its context window."""


def _is_prompt(message: dict[str, Any]) -> bool:
    """A user message that holds no toolResult: a conversation may start with it."""
    return message["role"] == "user" and not any("toolResult" in block for block in message["content"])


class ConversationManager(ABC):
    """Decides where an agent's conversation may be cut and what replaces the messages before the cut.

    A subclass says where the kept part may start (``_starts``) and drops the messages before a start
    (``_drop``); this class decides which start to cut at and never cuts a paused agent's conversation.
    """

    max_messages: int
    """More messages than this, and ``apply`` drops the oldest."""
    keep_messages: int
    """How many messages may stay after the cut ``apply`` makes (SlidingWindow: ``max_messages``)."""

    def apply(self, agent: Agent) -> None:
        """Before a model call: if the conversation holds more than ``max_messages``, drop the oldest
        messages, keeping at most ``keep_messages`` (or, where no start is that late, from the latest start)."""
        messages = agent.messages
        if agent.interrupt_state.activated or len(messages) <= self.max_messages:
            return
        starts = self._starts(messages)
        if starts:
            self._drop(agent, next((s for s in starts if len(messages) - s <= self.keep_messages), starts[-1]))

    def reduce(self, agent: Agent) -> bool:
        """After the model found the conversation too long: drop about its older half. False (and
        nothing changed) when nothing more can be dropped, or the agent is paused."""
        messages = agent.messages
        starts = [] if agent.interrupt_state.activated else self._starts(messages)
        if not starts:
            return False
        self._drop(agent, next((s for s in starts if s >= len(messages) / 2), starts[-1]))
        return True

    @abstractmethod
    def _starts(self, messages: list[dict[str, Any]]) -> list[int]:
        """The positions, in order, where the kept part of ``messages`` may start (never 0)."""

    @abstractmethod
    def _drop(self, agent: Agent, start: int) -> None:
        """Take the messages before ``start`` out of the agent's conversation (all or nothing)."""


def reduce_for(agent: Agent, overflow: ContextWindowOverflowError, reductions: int) -> None:
    """Have the agent's conversation manager drop more after ``overflow``, or say why the turn fails."""
    manager = agent.conversation_manager
    too_long = (
        f"the conversation of agent '{agent.name}' ({len(agent.messages)} messages) is longer than its model's "
        "context window"
    )
    if manager is None:
        raise ContextWindowOverflowError(
            f"{too_long}, and the agent has no conversation manager, so nothing was dropped and no reply was "
            "recorded: give it one (Agent(conversation_manager=SlidingWindow(...)) or Summarizing(...)), or use "
            f"a model with a larger window. The model said: {overflow}"
        ) from overflow
    if reductions >= MAX_REDUCTIONS:
        raise ContextWindowOverflowError(
            f"{too_long} after its conversation manager {manager!r} dropped more {reductions} times: no reply "
            "was recorded and nothing more was tried (what it dropped stays dropped); keep fewer messages "
            f"(max_messages) or use a model with a larger window. The model said: {overflow}"
        ) from overflow
    if not manager.reduce(agent):
        raise ContextWindowOverflowError(
            f"{too_long}, and its conversation manager {manager!r} cannot drop more of it (a sliding window "
            "keeps the turn in progress whole; a summary keeps at least the latest reply and what follows it): "
            "no reply was recorded; use a model with a larger window or fewer steps in a turn (max_steps). "
            f"The model said: {overflow}"
        ) from overflow
    logger.warning(
        "agent=<%s>, messages=<%d> | conversation too long for the model: its manager dropped more, asking again",
        agent.name,
        len(agent.messages),
    )


class SlidingWindow(ConversationManager):
    """Keeps the most recent messages, at most ``max_messages``, starting at a prompt.

    The window starts only at a user message without tool results, so a turn is never cut: when the
    turn in progress alone holds more than ``max_messages`` (at most ``2 * max_steps + 1`` messages),
    the window is that turn. A prompt that follows a turn which ended on tool results (``max_steps``,
    ``canceled``, dismissed interrupts) shares their message, so the window cannot start there.
    """

    def __init__(self, max_messages: int = 40) -> None:
        if type(max_messages) is not int or max_messages < 1:
            raise ValueError(f"SlidingWindow needs max_messages of at least 1, got {max_messages!r}")
        self.max_messages = self.keep_messages = max_messages

    def __repr__(self) -> str:
        return f"SlidingWindow(max_messages={self.max_messages})"

    def _starts(self, messages: list[dict[str, Any]]) -> list[int]:
        return [n for n, message in enumerate(messages) if n > 0 and _is_prompt(message)]

    def _drop(self, agent: Agent, start: int) -> None:
        del agent.messages[:start]
        agent.dropped_messages += start
        logger.info(
            "agent=<%s>, dropped=<%d>, kept=<%d> | sliding window moved", agent.name, start, len(agent.messages)
        )


class Summarizing(ConversationManager):
    """Keeps the most recent messages and a summary of the others, written by ``model`` (the agent's
    own when None).

    When the conversation holds more than ``max_messages``, the oldest messages are summarised into
    one user message that starts the conversation, and at most ``keep_messages`` (by default half of
    ``max_messages``) follow it, starting at an assistant message; a turn may be cut. The summary is
    asked with ``system_prompt`` and no tools, and is no reply of a turn: it is not recorded as one and
    does not count in the agent's ``cycle``, and hooks are not told of it. If it fails, the turn fails
    with a ``ModelError`` and nothing is dropped.
    """

    def __init__(
        self,
        max_messages: int = 40,
        keep_messages: int | None = None,
        model: Model | None = None,
        system_prompt: str = SUMMARY_PROMPT,
    ) -> None:
        keep = max(2, max_messages // 2) if keep_messages is None and type(max_messages) is int else keep_messages
        if type(max_messages) is not int or type(keep) is not int or not 2 <= keep < max_messages:
            raise ValueError(
                "Summarizing needs 2 <= keep_messages < max_messages (the summary takes one place, and the "
                f"messages kept start with a reply), got max_messages={max_messages!r}, keep_messages={keep!r}"
            )
        self.max_messages = max_messages
        self.keep_messages = keep
        self.model = model
        self.system_prompt = system_prompt

    def __repr__(self) -> str:
        return f"Summarizing(max_messages={self.max_messages}, keep_messages={self.keep_messages})"

    def _starts(self, messages: list[dict[str, Any]]) -> list[int]:
        # From 2 on: replacing a single message with a summary would not shorten the conversation.
        return [n for n, message in enumerate(messages) if n >= 2 and message["role"] == "assistant"]

    def _drop(self, agent: Agent, start: int) -> None:
        summary = self._summarise(agent, agent.messages[:start])
        agent.messages[:start] = [{"role": "user", "content": [{"text": SUMMARY_HEADER + summary}]}]
        agent.dropped_messages += start
        logger.info(
            "agent=<%s>, dropped=<%d>, kept=<%d> | oldest messages replaced by a summary",
            agent.name,
            start,
            len(agent.messages) - 1,
        )

    def _summarise(self, agent: Agent, dropped: list[dict[str, Any]]) -> str:
        model = self.model or agent.model
        request = [{"role": "user", "content": [{"text": "The conversation to summarise:\n\n" + _transcript(dropped)}]}]
        not_done = (
            f"agent '{agent.name}''s conversation manager could not summarise the {len(dropped)} oldest messages, "
            "so nothing was dropped and no reply was recorded"
        )
        try:
            reply = check_assistant_message(model.converse(request, self.system_prompt, []), "the summary's reply")
        except ModelError as error:
            raise ModelError(
                f"{not_done}: retry the turn, or give Summarizing(model=...) a model that can summarise. {error}"
            ) from error
        summary = "".join(block["text"] for block in reply["content"] if "text" in block).strip()
        if not summary:
            raise ModelError(f"{not_done}: the model's summary holds no text ({reply!r}); retry the turn")
        return summary


def _transcript(messages: list[dict[str, Any]]) -> str:
    """``messages`` as text for the model that summarises them: tool calls and results included."""
    return "\n\n".join(
        f"{message['role'].title()}: " + "\n".join(_block_text(block) for block in message["content"])
        for message in messages
    )


def _block_text(block: dict[str, Any]) -> str:
    if "text" in block:
        return str(block["text"])
    if "toolUse" in block:
        use = block["toolUse"]
        return f"[called the tool {use['name']} with {json.dumps(use.get('input'), default=str)}]"
    if "toolResult" in block:
        result = block["toolResult"]
        said = " ".join(_block_text(part) for part in result.get("content", []))
        return f"[tool result ({result.get('status', 'success')}): {said}]"
    if "json" in block:  # a toolResult's content
        return json.dumps(block["json"], default=str)
    return f"[{next(iter(block), 'empty')} block]"
