"""What Slack shows of a question: the message posted when it is asked (agent path, tool, input,
expiry, and the buttons), the same message once it is settled (who settled it and when, no
buttons), and the two modals a button opens (a deny's message, an approval's edited input). Built
with slack_sdk's Block Kit models; the ids a button answers are in its value, as JSON."""

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

MAX_INPUT_CHARS = 2500  # of the input's JSON shown (a section holds 3,000 characters)
APPROVE, DENY, EDIT = "resumable_approve", "resumable_deny", "resumable_edit"
DENY_MODAL, EDIT_MODAL = "resumable_deny_modal", "resumable_edit_modal"
MESSAGE_FIELD, INPUT_FIELD = "message", "input"


class Asked(BaseModel):
    """Which question a button or a modal answers: what its value (or a modal's private metadata) holds."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    turn_id: str
    request_id: str

    def value(self) -> str:
        return self.model_dump_json()


def question(asked: InteractionRequested) -> list[dict[str, Any]]:
    """The message for a question as it is asked: what it is, and the buttons that answer it."""
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
    return [*_what(asked), ContextBlock(elements=[MarkdownTextObject(text=outcome)]).to_dict()]


def deny_modal(asked: Asked) -> dict[str, Any]:
    """What Deny opens: an optional message for whoever asked."""
    field = PlainTextInputElement(action_id=MESSAGE_FIELD, multiline=True, max_length=2000)
    return View(
        type="modal",
        callback_id=DENY_MODAL,
        private_metadata=asked.value(),
        title="Deny",
        submit="Deny",
        close="Cancel",
        blocks=[InputBlock(block_id=MESSAGE_FIELD, label="Why (the agent reads it)", element=field, optional=True)],
    ).to_dict()


def edit_modal(asked: Asked, tool_input: Any) -> dict[str, Any]:
    """What Edit opens: the input as JSON, to change and approve."""
    field = PlainTextInputElement(
        action_id=INPUT_FIELD, multiline=True, initial_value=json.dumps(tool_input, indent=2)[:3000]
    )
    return View(
        type="modal",
        callback_id=EDIT_MODAL,
        private_metadata=asked.value(),
        title="Approve with edits",
        submit="Approve",
        close="Cancel",
        blocks=[InputBlock(block_id=INPUT_FIELD, label="The input it runs with (JSON)", element=field)],
    ).to_dict()


def _what(asked: InteractionRequested) -> list[dict[str, Any]]:
    path = " → ".join(asked.agent_path) or "the agent"
    shown = json.dumps(asked.input, indent=2, ensure_ascii=False, default=str)
    link = asked.inbox_url or asked.answer_url
    if len(shown) > MAX_INPUT_CHARS:
        shown = shown[:MAX_INPUT_CHARS] + "\n…"
        more = f"\n<{link}|See the whole input on the inbox page>" if link else "\n(the input is cut short here)"
    else:
        more = f"\n<{link}|Open it on the inbox page>" if link else ""
    wants = f"wants to run *{_escaped(asked.tool)}*" if asked.tool else f"asks: *{_escaped(asked.name)}*"
    what = f"*{_escaped(path)}* {wants}"
    return [
        SectionBlock(text=MarkdownTextObject(text=f"{what}\n{_escaped(asked.summary)}")).to_dict(),
        SectionBlock(text=MarkdownTextObject(text=f"```{_escaped(shown)}```{more}")).to_dict(),
    ]


def _expiry(asked: InteractionRequested) -> dict[str, Any]:
    at = datetime.fromisoformat(asked.expires_at.replace("Z", "+00:00"))
    shown = f"<!date^{int(at.timestamp())}^{{date_short_pretty}} at {{time}}|{asked.expires_at}>"
    return ContextBlock(elements=[MarkdownTextObject(text=f"Expires {shown}")]).to_dict()


def _escaped(text: str) -> str:
    """Text as Slack's mrkdwn shows it literally: its three control characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
