"""What Slack shows of a question: the message posted when it is asked (agent path, tool, input,
expiry, and the buttons), the same message once it is settled (who settled it and when, no
buttons), and the two modals a button opens (a deny's message, an approval's edited input). Built
with slack_sdk's Block Kit models; the ids a button answers are in its value, as JSON. What an agent
wrote is shown literally wherever it goes, the message's top-level text included (``escaped``).

Given the question as the table holds it (``InteractionView``), the message also shows what the inbox
card shows to judge it: the risk and the impact, who started the turn, its prompt (cut), the agent's
reason, the time left, and under a rule of several approvers the approvals so far ("1 of 2: alice");
an approval that needs a confirmation (a ``destructive`` risk, or its rule's ``confirm``) carries
Block Kit's confirmation dialog on Approve, naming what will run, so one press approves nothing."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from resumable.events.schemas import InteractionRequested
from resumable.plain import hidden, plain
from resumable.service.views import InteractionView

MAX_SECTION_CHARS = 3000  # Slack's limit on a section's text
MAX_INPUT_CHARS = 2500  # of the input's JSON shown, once escaped
MAX_LINE_CHARS = 400  # of the agent path, the tool's name, the summary, the fallback text, each, once escaped
MAX_MODAL_INPUT_CHARS = 3000  # Slack's limit on a text input's initial value
MAX_PROMPT_CHARS, MAX_REASON_CHARS = 300, 600  # of the turn's prompt and the agent's reason shown, once escaped
MAX_CONFIRM_CHARS = 300  # Slack's limit on a confirmation dialog's text
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


def question(asked: InteractionRequested, held: InteractionView | None = None) -> list[dict[str, Any]]:
    """The message for a question as it is asked: what it is (with ``held``, the question as the table
    holds it: what the inbox card shows to judge it), and the buttons that answer it (an approval's;
    another question is answered in words, on the inbox page it links to)."""
    judged = _judged(held) if held is not None else []
    if asked.name != APPROVAL:
        link = asked.inbox_url or asked.answer_url
        where = f"<{link}|Answer it on the inbox page>" if link else "Answer it on the inbox page."
        return [*_what(asked), *judged, _expiry(asked), _markdown_section(where)]
    ids = Asked(session_id=asked.session_id, turn_id=asked.turn_id or "", request_id=asked.request_id).value()
    # (without the question as held, as the event says: a confirmation is never left out)
    confirm = held.needs_confirmation if held is not None else asked.confirm or asked.risk == "destructive"
    approve = ButtonElement(
        text="Approve", action_id=APPROVE, value=ids, style="danger" if confirm else "primary",
        confirm=_confirmation(asked, held) if confirm else None,
    )  # fmt: skip
    buttons = [approve, ButtonElement(text="Deny", action_id=DENY, value=ids, style="danger")]
    if asked.editable:
        buttons.append(ButtonElement(text="Edit", action_id=EDIT, value=ids))
    actions = ActionsBlock(block_id=f"answer:{asked.request_id}", elements=buttons)
    return [*_what(asked), *judged, _expiry(asked), actions.to_dict()]


def _confirmation(asked: InteractionRequested, held: InteractionView | None) -> ConfirmObject:
    """The dialog Approve opens before anything is sent: the tool, its risk and impact first (declared by
    the tool or its rule), then the input's values (the agent's), all in plain text, cut to Slack's 300."""
    risk = held.risk if held is not None else asked.risk
    impact = held.impact if held is not None else asked.impact
    tool = asked.tool or asked.name
    values = held.summary.removeprefix(tool).strip() if held is not None and held.summary else ""
    said = f"Approving runs {tool}" + (f" (risk: {risk})" if risk else "") + (f". {_line(impact)}" if impact else "")
    if held is not None and held.rule is not None and held.rule.required > 1:
        said += f". Yours is one of the {held.rule.required} approvals it needs"
    said += f". With: {values}" if values else "."
    text = plain(said)
    return ConfirmObject(
        title="Run it?",
        text=PlainTextObject(text=text if len(text) <= MAX_CONFIRM_CHARS else text[: MAX_CONFIRM_CHARS - 1] + "…"),
        confirm="Approve: run it",
        deny="Cancel",
        style="danger",
    )


def _line(text: str) -> str:
    """``text`` on one line: a line break in it can make no line of its own that passes for ours."""
    return " ".join(text.split())


def _judged(held: InteractionView) -> list[dict[str, Any]]:
    """What the inbox card shows to judge the question. Resumable's facts in one block (the risk and
    the impact its tool or rule declares, the principal who started the turn, the approvals so far under
    a rule of several approvers); below, quoted and each on one line, what people and the agent wrote
    (the name a sign-in token gives, which its holder may set; the turn's prompt, cut; the agent's reason)."""
    facts = []
    if held.risk or held.impact:
        risk = f"*Risk: {escaped(held.risk, 20)}*" if held.risk else "*Impact*"
        facts.append(risk + (f": {escaped(_line(held.impact), MAX_LINE_CHARS)}" if held.impact else ""))
    if held.started_by:
        facts.append(f"Turn started by {escaped(held.started_by, MAX_LINE_CHARS)}")
    if held.rule is not None and held.rule.required > 1:
        voters = [escaped(vote.by, 100) for vote in held.approvals]
        facts.append(f"Approvals: {len(voters)} of {held.rule.required}" + (f": {', '.join(voters)}" if voters else ""))
    words = []
    if held.started_by_name:
        words.append(f"> Their sign-in gives their name as: {escaped(_line(held.started_by_name), 100)}")
    if held.root_prompt:
        words.append(f"> Prompt: {escaped(_line(held.root_prompt), MAX_PROMPT_CHARS)}")
    if held.explanation:
        words.append(f"> The agent's reason: {escaped(_line(held.explanation), MAX_REASON_CHARS)}")
    return [_markdown_section("\n".join(part)) for part in (facts, words) if part]


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
    """When it expires, in each reader's own time zone, and how long is left ("in 3 hours"), which
    Slack counts as it shows the message."""
    at = datetime.fromisoformat(asked.expires_at.replace("Z", "+00:00"))
    shown = f"<!date^{int(at.timestamp())}^{{date_short_pretty}} at {{time}} ({{ago}})|{escaped(asked.expires_at, 40)}>"
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
