"""What Slack shows of a question: the message posted when it is asked (agent path, tool, input,
expiry, and the buttons), the same message once it is settled (who settled it and when, no
buttons), and the two modals a button opens (a deny's message, an approval's edited input). Built
with slack_sdk's Block Kit models; the ids a button answers are in its value, as JSON. What an agent
wrote is shown literally wherever it goes, the message's top-level text included (``escaped``)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    SectionBlock,
)
from slack_sdk.models.views import View

from resumable.events.schemas import InteractionRequested
from resumable.plain import hidden, plain

MAX_SECTION_CHARS = 3000  # Slack's limit on a section's text
MAX_INPUT_CHARS = 2500  # of the input's JSON shown, once escaped
MAX_LINE_CHARS = 400  # of the agent path, the tool's name, the summary, the fallback text, each, once escaped
MAX_MODAL_INPUT_CHARS = 3000  # Slack's limit on a text input's initial value
APPROVE, DENY, EDIT = "resumable_approve", "resumable_deny", "resumable_edit"
DENY_MODAL, EDIT_MODAL = "resumable_deny_modal", "resumable_edit_modal"
MESSAGE_FIELD, INPUT_FIELD = "message", "input"
APPROVAL = "approval"  # (the interrupt a tool call that needs approval raises: the one the buttons answer)


class Asked(BaseModel):
    """Which question a button answers: what its value holds."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    turn_id: str
    request_id: str

    def value(self) -> str:
        return self.model_dump_json()


class Opened(BaseModel):
    """What a modal carries (its private metadata): the question, and the message it was opened from
    (a submission names no channel of its own: the reply goes there)."""

    model_config = ConfigDict(extra="forbid")

    asked: Asked
    channel_id: str | None = None
    message_ts: str | None = None


def question(asked: InteractionRequested) -> list[dict[str, Any]]:
    """The message for a question as it is asked: what it is, and the buttons that answer it (an
    approval's; another question is answered in words, on the inbox page it links to)."""
    if asked.name != APPROVAL:
        link = asked.inbox_url or asked.answer_url
        where = f"<{link}|Answer it on the inbox page>" if link else "Answer it on the inbox page."
        return [*_what(asked), _expiry(asked), _markdown_section(where)]
    ids = Asked(session_id=asked.session_id, turn_id=asked.turn_id or "", request_id=asked.request_id).value()
    buttons = [
        ButtonElement(text="Approve", action_id=APPROVE, value=ids, style="primary"),
        ButtonElement(text="Deny", action_id=DENY, value=ids, style="danger"),
    ]
    if asked.editable:
        buttons.append(ButtonElement(text="Edit", action_id=EDIT, value=ids))
    actions = ActionsBlock(block_id=f"answer:{asked.request_id}", elements=buttons)
    return [*_what(asked), _expiry(asked), actions.to_dict()]


def settled(asked: InteractionRequested, outcome: str) -> list[dict[str, Any]]:
    """The same message once the question is settled: ``outcome`` says how (by whom, when); no buttons."""
    said = MarkdownTextObject(text=escaped(outcome, MAX_LINE_CHARS), verbatim=True)
    return [*_what(asked), ContextBlock(elements=[said]).to_dict()]


def deny_modal(opened: Opened) -> dict[str, Any]:
    """What Deny opens: an optional message for whoever asked."""
    field = PlainTextInputElement(action_id=MESSAGE_FIELD, multiline=True, max_length=2000)
    block = InputBlock(block_id=MESSAGE_FIELD, label="Why (the agent reads it)", element=field, optional=True)
    return _modal(DENY_MODAL, opened, "Deny", "Deny", block)


def fallback(text: str) -> str:
    """A message's top-level text, what a notification or a screen reader says of it: Slack reads it as
    mrkdwn too, so it is escaped as the blocks are."""
    return escaped(text, MAX_LINE_CHARS)


def editable_text(tool_input: Any) -> str | None:
    """The input as the edit modal shows it (JSON, each hidden character in JSON's own escape, so that it
    reads back as the input), or None where it does not fit the modal whole."""
    text = json.dumps(tool_input, indent=2, ensure_ascii=False)
    text = "".join(json.dumps(c)[1:-1] if hidden(c) else c for c in text)
    return text if len(text) <= MAX_MODAL_INPUT_CHARS else None


def edit_modal(opened: Opened, text: str) -> dict[str, Any]:
    """What Edit opens: the input as JSON (``editable_text``), to change and approve."""
    field = PlainTextInputElement(action_id=INPUT_FIELD, multiline=True, initial_value=text)
    block = InputBlock(block_id=INPUT_FIELD, label="The input it runs with (JSON)", element=field)
    return _modal(EDIT_MODAL, opened, "Approve with edits", "Approve", block)


def _modal(callback_id: str, opened: Opened, title: str, submit: str, block: InputBlock) -> dict[str, Any]:
    """A modal of one field, carrying the question and its message (``Opened``) to its submission."""
    view = View(
        type="modal",
        callback_id=callback_id,
        private_metadata=opened.model_dump_json(),
        title=title,
        submit=submit,
        close="Cancel",
        blocks=[block],
    )
    return view.to_dict()


def _what(asked: InteractionRequested) -> list[dict[str, Any]]:
    path = escaped(" → ".join(asked.agent_path) or "the agent", MAX_LINE_CHARS)
    wants = (
        f"wants to run *{escaped(asked.tool, MAX_LINE_CHARS)}*"
        if asked.tool
        else f"asks: *{escaped(asked.name, MAX_LINE_CHARS)}*"
    )
    shown = json.dumps(asked.input, indent=2, ensure_ascii=False, default=str)
    body, cut = _escaped_cut(shown, MAX_INPUT_CHARS, _IN_CODE)
    link = asked.inbox_url or asked.answer_url
    if cut:
        more = f"\n<{link}|See the whole input on the inbox page>" if link else "\n(the input is cut short here)"
    else:
        more = f"\n<{link}|Open it on the inbox page>" if link else ""
    return [
        _markdown_section(f"*{path}* {wants}\n{escaped(asked.summary, MAX_LINE_CHARS)}"),
        _markdown_section(f"```{body}```{more}"),
    ]


def _markdown_section(text: str) -> dict[str, Any]:
    return SectionBlock(text=MarkdownTextObject(text=text[:MAX_SECTION_CHARS], verbatim=True)).to_dict()


def _expiry(asked: InteractionRequested) -> dict[str, Any]:
    at = datetime.fromisoformat(asked.expires_at.replace("Z", "+00:00"))
    shown = f"<!date^{int(at.timestamp())}^{{date_short_pretty}} at {{time}}|{escaped(asked.expires_at, 40)}>"
    return ContextBlock(elements=[MarkdownTextObject(text=f"Expires {shown}", verbatim=True)]).to_dict()


_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# In a code block only three backticks in a row mean anything (its end). A zero-width space after each of
# the input's backticks leaves no two side by side, whatever the run, and each is still shown as the
# backtick it is: a look-alike in its place would show a command other than the one that runs.
_IN_CODE = {**_ENTITIES, "`": "`\u200b"}


def escaped(text: str, limit: int) -> str:
    """``text`` as Slack's mrkdwn shows it literally (its three control characters escaped, so no
    link, mention or ``<!channel>`` can be made of it; each hidden character shown as its escape, so no
    right-to-left override reorders it), at most ``limit`` characters once escaped, cut (ending "…")
    where no escape is split."""
    return _escaped_cut(text, limit)[0]


def _escaped_cut(text: str, limit: int, entities: dict[str, str] = _ENTITIES) -> tuple[str, bool]:
    pieces = [entities.get(c) or plain(c) for c in text]
    if sum(map(len, pieces)) <= limit:
        return "".join(pieces), False
    out, size = [], 0
    for piece in pieces:
        if size + len(piece) > limit - 1:
            break
        out.append(piece)
        size += len(piece)
    return "".join(out) + "…", True
