"""An approved Strands tool call, run through the service's action journal (``_Journaled``, the tool the
hooks put in place of an approved one), and ``fencing_token``: the approved call's fencing token, for the
tool to pass to a write to another system."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncGenerator
from typing import Any

from strands.types._events import ToolInterruptEvent
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool as StrandsTool

from resumable.exceptions import ResumableError
from resumable.integrations.strands.run import _Tree
from resumable.runtime.interrupts import Interrupt, InterruptException
from resumable.runtime.invocation import ApprovedAction, FencingToken, Invocation

_FENCING_TOKEN: contextvars.ContextVar[FencingToken | None] = contextvars.ContextVar(
    "resumable_strands_fencing_token", default=None
)


def fencing_token() -> FencingToken | None:
    """The fencing token of the approved call running now (inside a Strands tool the service's journal
    runs), else None: pass it to a write to another system so a stale attempt is refused (see
    ``resumable.FencingToken``)."""
    return _FENCING_TOKEN.get()


class _Journaled(StrandsTool):
    """An approved tool call, run through the service's action journal: once, whatever happens."""

    def __init__(self, tool: Any, action: ApprovedAction, invocation: Invocation, tree: _Tree) -> None:
        super().__init__()
        self.tool = tool
        self.action = action
        self.invocation = invocation
        self.tree = tree

    @property
    def tool_name(self) -> str:
        return str(self.tool.tool_name)

    @property
    def tool_spec(self) -> Any:
        return self.tool.tool_spec

    @property
    def tool_type(self) -> str:
        return str(self.tool.tool_type)

    async def stream(self, tool_use: Any, invocation_state: dict[str, Any], **kwargs: Any) -> AsyncGenerator[Any, None]:
        if tool_use["input"] != self.action.input:
            yield ToolResultEvent(
                {
                    "toolUseId": tool_use["toolUseId"],
                    "status": "error",
                    "content": [
                        {
                            "text": f"Refused: the input of '{self.action.tool}' changed after it was approved; "
                            "it did NOT run."
                        }
                    ],
                }
            )
            return
        paused: list[Any] = []

        async def run_tool(token: FencingToken) -> dict[str, Any]:
            _FENCING_TOKEN.set(token)
            result: dict[str, Any] | None = None
            async for event in self.tool.stream(tool_use, invocation_state, **kwargs):
                if isinstance(event, ToolInterruptEvent):  # the tool asks a question of its own: not run yet
                    paused.append(event)
                    raise InterruptException([Interrupt(i.id, i.name, i.reason) for i in event.interrupts])
                if isinstance(event, ToolResultEvent):
                    if isinstance(event.exception, ResumableError):
                        raise event.exception  # ActionFencedError, ActionOutcomeUnknownError: the journal's to judge
                    result = dict(event.tool_result)
            if result is None:
                return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": "no result"}]}
            return result

        def perform(token: FencingToken) -> dict[str, Any]:
            # On the journal's thread, in a loop of its own: an action that started finishes and is recorded
            # even if Strands cancels this call's task (a sibling call failed).
            return asyncio.run(run_tool(token))

        journal = self.invocation.journal
        assert journal is not None
        try:
            result = await asyncio.to_thread(journal.run, self.action, perform)
        except InterruptException:
            yield paused[0]
            return
        except Exception as error:
            self.tree.failed(error)
            raise
        yield ToolResultEvent({**result, "toolUseId": tool_use["toolUseId"]})  # type: ignore[typeddict-item]
