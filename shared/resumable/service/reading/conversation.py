"""get-conversation: the messages of a turn so far, read-only and a page at a time, latest last, so an
approver reads what led the agent to ask.

The messages come from the turn's stored snapshot: the root agent's, or a sub-agent's whose
interrupted turn the root keeps (``preserve_context=False``); a sub-agent that keeps its own state
(``preserve_context=True``), or a Strands sub-agent, shows its root's conversation instead, and says so.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import Field

from resumable.exceptions import SnapshotError, ValidationFailedError
from resumable.service.access import load
from resumable.service.caller import Caller
from resumable.service.limits import bounded_json
from resumable.service.views import View
from resumable.store.records import TurnRecord, TurnTree

if TYPE_CHECKING:
    from resumable.service.dependencies import Dependencies

DEFAULT_PAGE = 20
MAX_PAGE = 100
MAX_TEXT_CHARS = 4000
"""The most of one block's text a page shows (the whole is in the snapshot)."""
MAX_PAGE_BYTES = 1024 * 1024
"""The most JSON one page holds (a reply stays far under Lambda's 6 MB): a page of long messages is
shorter, and ``before`` says where it stopped."""


class ConversationPage(View):
    session_id: str
    turn_id: str = Field(description="The turn whose conversation this is (a root or child turn).")
    agent: str = Field(description="Whose messages these are.")
    total: int = Field(description="How many messages the conversation holds so far.")
    start: int = Field(description="The position of the first message of this page (0: the first of all).")
    messages: list[dict[str, Any]] = Field(
        description="Oldest first; each {'role', 'content': [{'text'} | {'toolUse': {'name', 'input'}} | "
        "{'toolResult': {'status', 'content'}}]}."
    )
    before: int | None = Field(description="Send it as 'before' for the page of earlier messages; null: none.")
    note: str | None = Field(default=None, description="Why these are another agent's messages, when they are.")


def conversation(
    deps: Dependencies,
    session_id: str,
    turn_id: str,
    caller: Caller | None,
    before: int | None = None,
    limit: int = DEFAULT_PAGE,
) -> ConversationPage:
    """The ``limit`` messages before position ``before`` (default: the latest) of the turn's conversation."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationFailedError(f"'limit' is {limit}: it must be 1 to {MAX_PAGE}; nothing was read")
    if before is not None and before < 0:
        raise ValidationFailedError(f"'before' is {before}: a position, 0 or more; nothing was read")
    tree = load(deps, session_id, turn_id, caller)
    root = tree.root
    key = root.snapshot_key or root.base_snapshot_key
    try:
        snapshot = deps.snapshots.get(key) if key is not None else None
    except SnapshotError:
        snapshot = None
    turn = root if turn_id == root.turn_id else next(c for c in tree.children if c.turn_id == turn_id)
    messages, agent, note = _conversation_of(snapshot, tree, turn)
    end = len(messages) if before is None else min(before, len(messages))
    shown: list[dict[str, Any]] = []
    size = 0
    for message in reversed(messages[max(0, end - limit) : end]):  # the latest first, within the budget
        said = _shown(message)
        size += len(json.dumps(said, ensure_ascii=False).encode())
        if shown and size > MAX_PAGE_BYTES:
            break
        shown.insert(0, said)
    start = end - len(shown)
    return ConversationPage(
        session_id=session_id,
        turn_id=turn_id,
        agent=agent,
        total=len(messages),
        start=start,
        messages=shown,
        before=start if start > 0 else None,
        note=note if snapshot is not None or key is None else "its stored conversation could not be read",
    )


def _conversation_of(snapshot: Any, tree: TurnTree, turn: TurnRecord) -> tuple[list[dict[str, Any]], str, str | None]:
    """The messages of ``turn`` in the root's ``snapshot``, whose agent they are, and a note when they
    are the root's in place of a sub-agent's."""
    root_messages = _messages(snapshot)
    if turn.turn_id == tree.root.turn_id:
        return root_messages, tree.root.agent, None
    chain = [turn]
    while chain[0].parent_turn_id not in (None, tree.root.turn_id):
        chain.insert(0, next(c for c in tree.children if c.turn_id == chain[0].parent_turn_id))
    from resumable.runtime.agent_as_tool import STORED_TURNS_KEY  # (a sub-agent's page only: not every cold start)

    level = snapshot
    for child in chain:
        stored = ((level or {}).get("interrupt_state") or {}).get("context", {}).get(STORED_TURNS_KEY, {})
        level = stored.get(child.parent_tool_use_id) if isinstance(stored, dict) and not child.settled else None
        if not isinstance(level, dict) or level.get("agent") != child.agent:
            return (
                root_messages,
                tree.root.agent,
                f"{turn.agent}'s own conversation is not kept with the turn (it keeps its own state, or its "
                f"call is over): these are {tree.root.agent}'s messages",
            )
    return _messages(level), turn.agent, None


def _messages(snapshot: Any) -> list[dict[str, Any]]:
    """The messages of an agent's snapshot: ours (``messages``) or a Strands tree's root's."""
    if not isinstance(snapshot, dict):
        return []
    found = snapshot.get("messages")
    if found is None and isinstance(snapshot.get("root"), dict):
        found = (snapshot["root"].get("data") or {}).get("messages")
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []


def _shown(message: dict[str, Any]) -> dict[str, Any]:
    """A message as a person reads it: text, the tools it called with their input, and their results."""
    content: list[dict[str, Any]] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            content.append({"text": _cut(block["text"])})
        elif isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            content.append(
                {"toolUse": {"name": use.get("name"), "input": bounded_json(use.get("input"), MAX_TEXT_CHARS)}}
            )
        elif isinstance(block.get("toolResult"), dict):
            result = block["toolResult"]
            said = " ".join(
                c["text"] if isinstance(c.get("text"), str) else json.dumps(c.get("json"), ensure_ascii=False)
                for c in result.get("content") or []
                if isinstance(c, dict)
            )
            content.append({"toolResult": {"status": result.get("status"), "content": _cut(said)}})
    return {"role": message.get("role"), "content": content}


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + " [...]"
