"""ScriptedModel: a model that replays a script of replies, for tests and demos."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from resumable.exceptions import ScriptExhaustedError
from resumable.runtime.models.model import check_assistant_message


class ScriptedModel:
    """A deterministic model that replays Converse assistant messages; no network, no credentials.

    Reply ``k`` answers the conversation's ``k``-th model call: the script is indexed by how many
    assistant messages the conversation already holds, not by an internal counter, so an agent
    rebuilt from a snapshot continues exactly where its conversation stands. So it does not suit an
    agent whose conversation manager drops messages (it would replay earlier replies): give such an
    agent a model that answers from what the conversation holds.
    """

    def __init__(self, replies: Sequence[dict[str, Any]]) -> None:
        self.replies = [check_assistant_message(r, f"ScriptedModel reply {n}") for n, r in enumerate(replies)]

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(self.replies):
            raise ScriptExhaustedError(
                f"ScriptedModel has {len(self.replies)} replies, but the conversation already holds {index} "
                f"assistant messages and asks for reply {index + 1}: add replies to the script"
            )
        return copy.deepcopy(self.replies[index])
