"""Running the tool calls of one model reply: each through the hooks, approved ones through the
action journal, and independent calls at once on a bounded pool of threads.

Results come back in the order the model asked for them; every interrupt of every call is collected
into one pause; a call still waiting for a thread when the stop signal is given does not start (the
step then ends canceled). A call that already has a result (the step is resuming) is not run again.
A step that will not resume (canceled, or its interrupts dismissed) is closed: every call gets a
result, the ones that did not finish an error that says so.
"""

from __future__ import annotations

import contextvars
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from resumable.exceptions import ActionOutcomeUnknownError, GrantLapsedError, ResumableError
from resumable.runtime.approval import ApprovalHook, run_approved
from resumable.runtime.hooks import AfterToolCall, BeforeToolCall
from resumable.runtime.interrupts import CHECKPOINT_INTERRUPT, TOOL_RESULTS_KEY, Interrupt, InterruptException
from resumable.runtime.tools import Tool, ToolContext, tool_result

if TYPE_CHECKING:
    from resumable.runtime.agent import Agent
    from resumable.runtime.invocation import Invocation

logger = logging.getLogger(__name__)

_APPROVAL = ApprovalHook()


@dataclass
class Step:
    """How the tool calls of one reply went: ``results`` by toolUseId (of the calls that ended),
    ``interrupts`` (of the calls that paused, in call order), and ``canceled`` (the stop signal kept
    a call from starting)."""

    results: dict[str, dict[str, Any]]
    interrupts: list[Interrupt]
    canceled: bool = False


def run_step(agent: Agent, tool_uses: list[dict[str, Any]], invocation: Invocation, cycle: int | None) -> Step:
    """Run every call of the reply ``cycle`` that has no result yet."""
    state = agent.interrupt_state
    results: dict[str, dict[str, Any]] = dict(state.context.get(TOOL_RESULTS_KEY, {})) if state.activated else {}
    interrupts: dict[str, Interrupt] = {}
    calls: list[tuple[Tool, ToolContext]] = []
    for use in tool_uses:
        tool_use_id = use["toolUseId"]
        if tool_use_id in results:
            continue
        selected = agent.tools.get(use["name"])
        if selected is None:
            results[tool_use_id] = tool_result(
                tool_use_id, f"Unknown tool '{use['name']}'; available tools: {sorted(agent.tools)}", "error"
            )
            continue
        context = ToolContext(agent, use, invocation, cycle)
        calls.append((selected, context))
    canceled = False
    for (_, context), outcome in zip(calls, _run_all(agent, calls, invocation), strict=True):
        if outcome is None:
            canceled = True
        elif isinstance(outcome, InterruptException):
            interrupts.update((i.id, i) for i in outcome.interrupts)
        else:
            results[context.tool_use_id] = outcome
    return Step(results, list(interrupts.values()), canceled)


def close_step(agent: Agent, unfinished: str, results: dict[str, dict[str, Any]] | None = None) -> None:
    """End the agent's paused step: finished calls keep their results (``results``, else those of the
    paused turn), unfinished ones get ``unfinished``."""
    if results is None:
        results = agent.interrupt_state.context.get(TOOL_RESULTS_KEY, {})
    tool_uses = [b["toolUse"] for b in agent.messages[-1]["content"] if "toolUse" in b] if agent.messages else []
    for use in tool_uses:
        paused = agent.tools.get(use["name"])
        if use["toolUseId"] not in results and paused is not None:
            paused.abandon(use["toolUseId"])
    if tool_uses:
        agent.messages.append(
            {
                "role": "user",
                "content": [
                    {"toolResult": results.get(u["toolUseId"]) or tool_result(u["toolUseId"], unfinished, "error")}
                    for u in tool_uses
                ],
            }
        )
    agent.interrupt_state.deactivate()


_Outcome = dict[str, Any] | InterruptException | None


def _run_all(agent: Agent, calls: list[tuple[Tool, ToolContext]], invocation: Invocation) -> list[_Outcome]:
    """Each call's outcome, in call order: one at a time in this thread when the agent allows one,
    else on a pool of ``agent.max_concurrent_tools`` threads (each with this thread's context
    variables). Waits for every call before it returns or raises (a crash before any other error)."""
    workers = min(agent.max_concurrent_tools, len(calls))
    if workers <= 1:
        return [_start(agent, tool, context, invocation, waited=n > 0) for n, (tool, context) in enumerate(calls)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"tools-{agent.name}") as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, _start, agent, tool, context, invocation, n >= workers)
            for n, (tool, context) in enumerate(calls)
        ]
    errors = [error for error in (future.exception() for future in futures) if error is not None]
    if errors:
        raise next((error for error in errors if not isinstance(error, Exception)), errors[0])
    return [future.result() for future in futures]


def _start(agent: Agent, tool: Tool, context: ToolContext, invocation: Invocation, waited: bool) -> _Outcome:
    """Start one call, unless a stop was signalled while it waited for its turn (None) or the
    invocation asks for a checkpoint first (the turn pauses before the call; continuing the turn
    answers the checkpoint with CONTINUE and the call runs then)."""
    if waited and invocation.should_stop():
        logger.info(
            "agent=<%s>, tool=<%s>, tool_use_id=<%s> | stop signal seen: the call did not start",
            agent.name,
            tool.name,
            context.tool_use_id,
        )
        return None
    if tool.checkpoints_before and invocation.should_checkpoint():
        checkpoint = context.interrupt_id(CHECKPOINT_INTERRUPT)
        return InterruptException([Interrupt(checkpoint, CHECKPOINT_INTERRUPT, {"tool": tool.name})])
    return run_call(agent, tool, context)


def run_call(agent: Agent, tool: Tool, context: ToolContext) -> dict[str, Any] | InterruptException:
    """One call: the before hooks (the agent's, then the approval policy's), the tool (an approved
    call through the journal), the after hooks; its toolResult, or the pause it raised. A tool that
    raises gets its error as its result (the model may try another way)."""
    try:
        return _hooked(agent, tool, context)
    except InterruptException as pause:
        return pause
    except ActionOutcomeUnknownError as unknown:  # not journaled (a journaled one is recorded in doubt)
        logger.warning(
            "agent=<%s>, tool=<%s>, tool_use_id=<%s> | outcome unknown: %s",
            agent.name,
            tool.name,
            context.tool_use_id,
            unknown,
        )
        return tool_result(context.tool_use_id, str(unknown), "error")
    except ResumableError:
        raise
    except Exception as error:
        logger.warning(
            "agent=<%s>, tool=<%s>, tool_use_id=<%s> | tool raised %s",
            agent.name,
            tool.name,
            context.tool_use_id,
            type(error).__name__,
        )
        return tool_result(context.tool_use_id, f"Error: {type(error).__name__}: {error}", "error")


def _hooked(agent: Agent, tool: Tool, context: ToolContext) -> dict[str, Any]:
    hooks = [*agent.hooks, _APPROVAL]
    before = BeforeToolCall(agent, tool, context, context.tool_use.get("input", {}))
    for hook in hooks:
        hook.before_tool_call(before)
        if before.refusal is not None:
            break
    if before.refusal is not None:
        result = before.refused_result()
    elif before.approved:
        try:
            result = run_approved(tool, before.tool_input, context, before.grant)
        except GrantLapsedError:  # (revoked or expired since it was read: the call asks a person instead)
            _APPROVAL.ask(before)  # (a new question: it pauses the turn here)
            refused = before.refusal is not None
            result = before.refused_result() if refused else run_approved(tool, before.tool_input, context)
    else:
        result = tool.invoke(before.tool_input, context)
    if before.notes and before.refusal is None:
        result = {**result, "content": [*before.notes, *result.get("content", [])]}
    after = AfterToolCall(agent, tool, context, result, refused=before.refusal is not None)
    for hook in reversed(hooks):
        try:
            hook.after_tool_call(after)
        except Exception as error:  # the call ran: its result stands whatever a hook after it does
            logger.error(
                "agent=<%s>, tool=<%s>, tool_use_id=<%s> | after_tool_call hook %s raised %s: %s; the result is kept",
                agent.name,
                tool.name,
                context.tool_use_id,
                type(hook).__name__,
                type(error).__name__,
                error,
            )
    return after.result
