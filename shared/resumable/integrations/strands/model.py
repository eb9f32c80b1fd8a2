"""``ScriptedStrandsModel``: a Strands model that replays a script of assistant messages, offline (for
tests, the bench and examples, as ``resumable.ScriptedModel`` is for our runtime)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from strands.models.model import Model as StrandsModel

from resumable.exceptions import ModelError


class ScriptedStrandsModel(StrandsModel):
    """A Strands model that replays assistant messages (Converse shape), offline: reply ``k`` answers a
    conversation holding ``k`` assistant messages, so a rebuilt agent goes on where its conversation
    stands (like ``resumable.ScriptedModel``)."""

    def __init__(self, replies: Sequence[dict[str, Any]]) -> None:
        self.replies = [dict(r) for r in replies]
        self.config: dict[str, Any] = {}

    @classmethod
    def one_call(cls, tool_name: str, tool_input: dict[str, Any], then: str) -> ScriptedStrandsModel:
        """A model that calls ``tool_name`` with ``tool_input`` once, then answers ``then``."""
        call = {"toolUse": {"toolUseId": f"{tool_name}-1", "name": tool_name, "input": tool_input}}
        return cls([{"role": "assistant", "content": [call]}, {"role": "assistant", "content": [{"text": then}]}])

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("ScriptedStrandsModel does not produce structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> Any:
        index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(self.replies):
            raise ModelError(
                f"ScriptedStrandsModel has {len(self.replies)} replies, but the conversation already holds {index} "
                "assistant messages: add replies to the script"
            )
        for event in _stream_events(self.replies[index]):
            yield event


def _stream_events(reply: dict[str, Any]) -> Iterable[dict[str, Any]]:
    yield {"messageStart": {"role": "assistant"}}
    uses_tools = False
    for block in reply["content"]:
        if "toolUse" in block:
            uses_tools = True
            use = block["toolUse"]
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(use["input"])}}}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
        yield {"contentBlockStop": {}}
    yield {"messageStop": {"stopReason": "tool_use" if uses_tools else "end_turn"}}
    yield {"metadata": {"usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "metrics": {"latencyMs": 0}}}
