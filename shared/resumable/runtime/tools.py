"""Tools: plain functions the model may call.

``@tool`` builds the tool's input schema from the function's type hints and its description from the
docstring. ``@tool(approval=True)`` asks a person before the function runs (``edits=True``: the person
may edit its input first; resumable.runtime.approval has the rules, and the policies for tools you did
not write); ``risk`` and ``impact`` tell that person how much the call can harm and what it touches
(``@tool(approval=True, risk="destructive", impact="Deletes the record and its backups")``);
``@tool(context=True)`` passes a ``ToolContext`` so the function can raise interrupts of
its own.
"""

from __future__ import annotations

import copy
import inspect
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from resumable.runtime.approval import ApprovalAnswer
from resumable.runtime.interrupts import APPROVAL_INTERRUPT, Interrupt, InterruptException, tool_interrupt_id
from resumable.runtime.invocation import FencingToken, Invocation
from resumable.runtime.rules import RISKS, Risk, check_impact

if TYPE_CHECKING:
    from resumable.runtime.agent import Agent

__all__ = ["APPROVAL_INTERRUPT", "ApprovalAnswer", "FunctionTool", "Tool", "ToolContext", "tool", "tool_result"]


def tool_result(tool_use_id: str, output: Any, status: Literal["success", "error"] = "success") -> dict[str, Any]:
    """A Converse ``toolResult``: strings become text content, dicts and lists JSON content."""
    if isinstance(output, dict | list):
        content: dict[str, Any] = {"json": output}
    else:
        # Bedrock refuses blank text blocks, so a tool that returns nothing says so.
        content = {"text": str(output) if output not in (None, "") else "(no output)"}
    return {"toolUseId": tool_use_id, "status": status, "content": [content]}


@dataclass
class ToolContext:
    """What a tool declared with ``context=True`` receives: the calling agent and its tool use, the
    number of the model reply that asked for it (``cycle``: a toolUseId names a call only within one
    reply), and, while an approved action runs under the service's journal, its ``fencing_token``
    (None otherwise)."""

    agent: Agent
    tool_use: dict[str, Any]
    invocation: Invocation
    cycle: int | None = None
    fencing_token: FencingToken | None = None

    @property
    def tool_use_id(self) -> str:
        return str(self.tool_use["toolUseId"])

    def interrupt_id(self, name: str) -> str:
        """The id of this call's interrupt ``name`` (the same every time the call runs)."""
        return tool_interrupt_id(self.tool_use_id, name, self.cycle)

    def interrupt(self, name: str, reason: Any = None) -> Any:
        """Pause the turn until a response for ``name`` arrives; on resume, return that response.

        The first call raises (the tool stops here and the turn pauses); when the turn resumes with a
        response, the tool runs again from its start and this call returns the response.
        """
        interrupt_id = self.interrupt_id(name)
        answers = self.agent.interrupt_state.answers
        if interrupt_id in answers:
            return answers[interrupt_id]
        raise InterruptException([Interrupt(interrupt_id, name, reason)])


class Tool:
    """A tool the model can call. Subclasses implement ``invoke``."""

    name: str
    description: str
    input_schema: dict[str, Any]
    checkpoints_before: bool = True
    """Whether a turn may checkpoint before a call of this tool (see ``Invocation.checkpoint``)."""
    approval: bool = False
    """Declared to need a person's approval before every call (policies cannot exempt it)."""
    approval_edits: bool = False
    """Declared to let the person edit the input before approving."""
    risk: Risk | None = None
    """Declared harm of a call (``low`` to ``destructive``), shown to whoever approves it."""
    impact: str | None = None
    """One line saying what a call touches, shown to whoever approves it."""
    journals_approved_calls: bool = True
    """Whether an approved call runs through the action journal (not a sub-agent: it may pause)."""

    @property
    def spec(self) -> dict[str, Any]:
        """The Converse ``toolSpec`` of this tool."""
        return {"name": self.name, "description": self.description, "inputSchema": {"json": self.input_schema}}

    def invoke(self, tool_input: Any, context: ToolContext) -> dict[str, Any]:
        """Run the tool and return a ``toolResult``; raise ``InterruptException`` to pause."""
        raise NotImplementedError

    def invalid_input(self, tool_input: Any) -> str | None:
        """Why ``tool_input`` cannot be this tool's input (said to the model), or None if it can: by
        default, checked against ``input_schema`` (asked only before an approval, and of an edit)."""
        from resumable.runtime.schema import schema_problem

        problem = schema_problem(tool_input, self.input_schema)
        return f"Invalid input for tool '{self.name}', it did not run: {problem}" if problem else None

    def paused_inside(self, context: ToolContext) -> bool:
        """Whether the call of ``context`` already started and is paused inside (a sub-agent's)."""
        return False

    def abandon(self, tool_use_id: str) -> None:
        """The paused call ``tool_use_id`` will never resume (its interrupts were dismissed or the
        turn was canceled). Tools that keep state for paused calls drop it here."""


_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARGS_SECTIONS = {"Args", "Arguments", "Parameters"}
_ARG_LINE = re.compile(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's description (the text before its first section) and arguments.

    An argument's description may continue on lines indented deeper than its name.
    """
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    params_indent = 0
    for line in inspect.cleandoc(doc).splitlines():
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in _ARGS_SECTIONS and line.strip():
            indent = len(line) - len(line.lstrip())
            match = _ARG_LINE.match(line.strip())
            if match and (current is None or indent <= params_indent):
                current, params_indent = match.group(1), indent
                params[current] = match.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params


_PLAIN = (type(None), type(...), bool, int, float, str, bytes)


def _key(fields: tuple[tuple[str, Any, Any, str | None], ...]) -> tuple[Any, ...]:
    """What makes a tool's input model the same as another's, as a key, or TypeError where there is no
    sure one. Equal is not enough: 1, 1.0 and True are equal defaults, ``Literal["a", "b"]`` equals
    ``Literal["b", "a"]``, and a tuple or a Decimal can be equal to another and print differently. So
    a default is a key only if it is plain (None, a bool, a number, a string: by its type and its
    repr), and an annotation by itself and its repr (two classes of one name are two objects)."""
    key: list[Any] = []
    for name, annotation, default, about in fields:
        if type(default) not in _PLAIN:
            raise TypeError(f"{type(default).__name__} default")
        key.append((name, annotation, repr(annotation), type(default), repr(default), about))
    return tuple(key)


def _input_model(
    name: str, fields: tuple[tuple[str, Any, Any, str | None], ...]
) -> tuple[type[BaseModel], dict[str, Any]]:
    """A tool's input model and its JSON Schema, from its inputs (name, annotation, default, described
    as). Made once for the same key (``_key``; made every time where there is no sure key): a factory
    that builds its agents for every request decorates the same functions again each time, and making a
    pydantic model and its schema is most of a small tool's cost (about half a millisecond). The 256
    made last are kept."""
    try:
        key = (name, _key(fields))
        with _MADE_LOCK:
            cached = _MADE.get(key)
    except TypeError:  # (no sure key: a tuple default, an annotation that cannot be hashed)
        return _made(name, fields)
    if cached is None:
        cached = _made(name, fields)
        with _MADE_LOCK:
            if len(_MADE) >= 256:  # (the oldest goes: a factory that makes new classes each time cannot grow it)
                _MADE.pop(next(iter(_MADE)), None)
            _MADE[key] = cached
    return cached


_MADE: dict[tuple[str, tuple[Any, ...]], tuple[type[BaseModel], dict[str, Any]]] = {}
_MADE_LOCK = threading.Lock()


def _made(name: str, fields: tuple[tuple[str, Any, Any, str | None], ...]) -> tuple[type[BaseModel], dict[str, Any]]:
    defined: dict[str, Any] = {
        field: (annotation, Field(default, description=about)) for field, annotation, default, about in fields
    }
    model: type[BaseModel] = create_model(f"{name}_input", __config__=ConfigDict(extra="forbid"), **defined)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return model, schema


class FunctionTool(Tool):
    """A tool made from a Python function by ``@tool``."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        approval: bool = False,
        edits: bool = False,
        context: bool = False,
        name: str | None = None,
        description: str | None = None,
        risk: Risk | None = None,
        impact: str | None = None,
    ) -> None:
        self.function = function
        self.approval = approval
        self.approval_edits = edits
        self.takes_context = context
        self.name = name or function.__name__
        if risk is not None and risk not in RISKS:
            raise ValueError(f"tool '{self.name}': risk is one of {', '.join(RISKS)}, got {risk!r}")
        self.risk = risk
        self.impact = check_impact(impact, f"tool '{self.name}'")
        doc_description, param_docs = _parse_docstring(function.__doc__ or "")
        self.description = description or doc_description or self.name
        signature = inspect.signature(function)
        if context and "context" not in signature.parameters:
            raise ValueError(
                f"tool '{self.name}' is declared with context=True but has no 'context' parameter: "
                "add `context: ToolContext` to its signature or drop context=True"
            )
        hints = inspect.get_annotations(function, eval_str=True)
        fields: list[tuple[str, Any, Any, str | None]] = []
        for param in signature.parameters.values():
            if context and param.name == "context":
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ValueError(f"tool '{self.name}' cannot take *args or **kwargs: name every input")
            default = ... if param.default is param.empty else param.default
            fields.append((param.name, hints.get(param.name, Any), default, param_docs.get(param.name)))
        self.input_model, schema = _input_model(self.name, tuple(fields))
        self.input_schema = copy.deepcopy(schema)  # (the tool's own: a caller may change what it is given)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the undecorated function directly (no approval, no schema check)."""
        return self.function(*args, **kwargs)

    def invalid_input(self, tool_input: Any) -> str | None:
        try:
            self.input_model.model_validate(tool_input)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in error.errors())
            return f"Invalid input for tool '{self.name}', it did not run: {problems}"
        return None

    def invoke(self, tool_input: Any, context: ToolContext) -> dict[str, Any]:
        problem = self.invalid_input(tool_input)
        if problem is not None:
            return tool_result(context.tool_use_id, problem, "error")
        arguments = dict(self.input_model.model_validate(tool_input))
        if self.takes_context:
            arguments["context"] = context
        return tool_result(context.tool_use_id, self.function(**arguments))


@overload
def tool(function: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    approval: bool = False,
    edits: bool = False,
    context: bool = False,
    name: str | None = None,
    description: str | None = None,
    risk: Risk | None = None,
    impact: str | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    approval: bool = False,
    edits: bool = False,
    context: bool = False,
    name: str | None = None,
    description: str | None = None,
    risk: Risk | None = None,
    impact: str | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a function a tool: ``@tool`` or ``@tool(approval=True, edits=True, context=True, name=...,
    description=..., risk=..., impact=...)``. ``edits`` needs ``approval``."""
    if edits and not approval:
        raise ValueError("@tool(edits=True) lets a person edit the input of a call they approve: add approval=True")

    def decorate(fn: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            fn,
            approval=approval,
            edits=edits,
            context=context,
            name=name,
            description=description,
            risk=risk,
            impact=impact,
        )

    return decorate(function) if function is not None else decorate
