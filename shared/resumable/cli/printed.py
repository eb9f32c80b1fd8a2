"""What the ``resumable`` command prints: the inbox, a turn, a session, as tables a person reads (the
API's reply as it came with ``--json``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

DECISIONS = {
    None: "waiting",
    "approved": "approved",
    "approved_with_edits": "approved with edits",
    "denied": "denied",
    "answered": "answered",
    "expired": "expired",
    "superseded": "superseded",
}
"""How a question stands, in words: the API's ``decision`` (null while it waits)."""
_MAX_LINE = 100


def until(moment: str | None) -> str:
    if not moment:
        return "-"
    left = datetime.fromisoformat(moment.replace("Z", "+00:00")) - datetime.now(UTC)
    seconds = int(left.total_seconds())
    if seconds <= 0:
        return "expired"
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def table(rows: list[list[str]], header: list[str]) -> str:
    """One line per row, in columns; every cell on one line (its whitespace, line breaks too, collapsed)."""
    rows = [[" ".join(str(cell).split()) for cell in row] for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [header, *rows]
    )


def _cut(text: str, limit: int = _MAX_LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def asked(interaction: dict[str, Any]) -> str:
    """What the question asks: the tool and its input (the approved one after an edit)."""
    reason = interaction.get("reason")
    if isinstance(reason, dict) and "tool" in reason:
        edited = interaction.get("approvedInput")
        shown = json.dumps(edited if edited is not None else reason.get("input"), ensure_ascii=False)
        return f"{reason['tool']} {_cut(shown, 60)}" + (" (edited)" if edited is not None else "")
    return f"{interaction.get('name')}: {_cut(json.dumps(reason, ensure_ascii=False), 60)}"


def _without_empty(rows: list[list[Any]], header: list[str], *names: str) -> tuple[list[list[Any]], list[str]]:
    """The table without those of the columns ``names`` that are empty in every row."""
    for name in names:
        column = header.index(name)
        if not any(row[column] for row in rows):
            rows = [row[:column] + row[column + 1 :] for row in rows]
            header = header[:column] + header[column + 1 :]
    return rows, header


def approvals(interaction: dict[str, Any]) -> str:
    """Where a question under an approval rule stands: "1 of 2: alice" ("" without a rule)."""
    rule = interaction.get("rule")
    if not isinstance(rule, dict):
        return ""
    given_ = [a for a in interaction.get("approvals", []) if isinstance(a, dict)]
    given = [str(a.get("by")) for a in given_]
    shown = f"{len(given)} of {rule.get('required')}" + (": " + ", ".join(given) if given else "")
    if interaction.get("startedByYou"):  # (waiting for whom; and why the reader's own approval cannot count)
        approvers = rule.get("approvers")
        shown += " from " + (", ".join(map(str, approvers)) if approvers else "any approver")
        shown += "; you started this turn, so yours cannot count" if rule.get("selfApproval") is False else ""
    edited = next((a["input"] for a in given_ if a.get("input") is not None), None)
    shown += f" with {json.dumps(edited, ensure_ascii=False)}" if edited is not None else ""
    shown += " (escalated)" if interaction.get("escalatedAt") else ""
    return shown + (" (you approved)" if interaction.get("approvedByYou") else "")


def _who(interaction: dict[str, Any]) -> str:
    """Who started the turn that asks: the principal that signed in, then the name their token gives, as
    theirs (a person may set their own name: it proves nothing)."""
    name, principal = interaction.get("startedByName"), interaction.get("startedBy")
    if name and principal and name != principal:
        return f"{principal} (who gives their name as \u201c{name}\u201d)"
    return str(principal or name or "-")


def print_inbox(body: dict[str, Any]) -> None:
    """One row per question (what it asks, its risk, for whom, when it expires), then its context:
    the agent's reason, the prompt that started it, and its ids (to answer with the request id alone)."""
    listed = body.get("interactions", [])
    if not listed:
        print("nothing is waiting for you" if not body.get("cursor") else "nothing on this page")
        if body.get("cursor"):
            print(f"\nmore: resumable inbox --cursor {body['cursor']}")
        return
    rows = [
        [
            i["requestId"],
            i.get("risk") or "",
            str(i.get("summary") or asked(i))
            + (" (editable)" if i.get("editable") else "")
            + (" (dismissed)" if i.get("dismissedByYou") else ""),
            _who(i),
            approvals(i),
            until(i.get("expiresAt")),
        ]
        for i in listed
    ]
    header = ["REQUEST", "RISK", "ASKS", "FOR", "APPROVALS", "EXPIRES IN"]
    rows, header = _without_empty(rows, header, "RISK", "APPROVALS")
    lines = table(rows, header).split("\n")
    print(lines[0])
    for line, interaction in zip(lines[1:], listed, strict=True):
        print(line)
        for detail in _context(interaction):
            print("    " + detail)
    if body.get("cursor"):
        print(f"\nmore: resumable inbox --cursor {body['cursor']}")


def _context(interaction: dict[str, Any]) -> list[str]:
    said = []
    if interaction.get("impact"):
        said.append(f"impact: {_cut(interaction['impact'])}")
    if interaction.get("explanation"):
        said.append(f"why: {_cut(interaction['explanation'])}")
    if interaction.get("rootPrompt"):
        said.append(f"prompt: {_cut(interaction['rootPrompt'])}")
    said.append(f"input: {asked(interaction)}")
    said.append(
        f"session {interaction['sessionId']}  turn {interaction['turnId']}  agents "
        + " -> ".join(interaction.get("agentPath", []))
    )
    return said


def print_turn(turn: dict[str, Any]) -> None:
    print(f"session {turn['sessionId']}  turn {turn['turnId']}  {turn['status']}")
    if turn.get("output"):
        print(f"output: {turn['output']}")
    if turn.get("error"):
        print(f"error: {turn['error']}")
    rows = [
        [
            i["requestId"],
            DECISIONS.get(i.get("decision"), str(i.get("decision"))) if i.get("status") != "requested" else "waiting",
            " -> ".join(i.get("agentPath", [])),
            asked(i),
            approvals(i),
            i.get("answeredBy") or "",
        ]
        for i in turn.get("interactions", [])
    ]
    if rows:
        header = ["REQUEST", "DECISION", "AGENTS", "ASKS", "APPROVALS", "ANSWERED BY"]
        print(table(*_without_empty(rows, header, "APPROVALS")))
    for waiting in (i for i in turn.get("interactions", []) if i.get("status") == "requested"):
        risk = f" ({waiting['risk']})" if waiting.get("risk") else ""
        print(f"{waiting['requestId']} waits{risk}, for {_who(waiting)}:")
        for detail in _context(waiting)[:-2]:  # (its input and ids are in the table)
            print("    " + detail)
    children = turn.get("children", [])
    if children:
        print("child turns:")
        print(
            table(
                [[c["turnId"], c["status"], " -> ".join(c.get("agentPath", []))] for c in children],
                ["TURN", "STATUS", "AGENTS"],
            )
        )


def print_question(interaction: dict[str, Any]) -> None:
    """One question, whatever its status: what it asks and for whom, where it stands, its context, and
    what the reader may do with it."""
    request = interaction["requestId"]
    decision = DECISIONS.get(interaction.get("decision"), str(interaction.get("decision")))
    stands = "waiting" if interaction.get("status") == "requested" else decision
    risk = f" ({interaction['risk']})" if interaction.get("risk") else ""
    print(f"question {request}  {stands}{risk}: {interaction.get('summary') or asked(interaction)}")
    print(f"    started by: {_who(interaction)}" + (" (you)" if interaction.get("startedByYou") else ""))
    if approvals(interaction):
        print(f"    approvals: {approvals(interaction)}")
    if interaction.get("answeredBy"):
        via = f" via {interaction['answeredVia']}" if interaction.get("answeredVia") else ""
        print(f"    answered by: {interaction['answeredBy']} at {interaction.get('answeredAt')}{via}")
    response = interaction.get("response")
    if isinstance(response, dict) and response.get("message"):
        print(f"    said: {_cut(str(response['message']))}")
    elif response is not None and not isinstance(response, dict):
        print(f"    answer: {_cut(json.dumps(response, ensure_ascii=False))}")
    if interaction.get("decision") == "superseded":
        print("    superseded: its turn was canceled, or moved on without it")
    if interaction.get("status") == "requested":
        print(f"    expires in: {until(interaction.get('expiresAt'))}")
    for detail in _context(interaction):
        print("    " + detail)
    if interaction.get("status") == "requested" and not interaction.get("approvedByYou"):
        print(f"answer it: resumable approve {request}, or resumable deny {request} --message WHY")


def print_conversation(page: dict[str, Any]) -> None:
    """A turn's messages, one line per block: who said it, then what."""
    if page.get("note"):
        print(f"({page['note']})")
    count = len(page["messages"])
    shown = f"messages {page['start'] + 1} to {page['start'] + count}" if count else "none before that position"
    print(f"{page['agent']}'s conversation: {page['total']} messages, {shown}")
    for said in page.get("messages", []):
        who = "agent" if said.get("role") == "assistant" else "user"
        for block in said.get("content", []):
            if "text" in block:
                text = block["text"]
            elif "toolUse" in block:
                text = f"calls {block['toolUse']['name']} {json.dumps(block['toolUse']['input'], ensure_ascii=False)}"
            else:
                text = f"result ({block['toolResult']['status']}): {block['toolResult']['content']}"
            print(f"{who:>5}: {text}")
    if page.get("before") is not None:
        print(f"\nearlier: resumable conversation {page['sessionId']} {page['turnId']} --before {page['before']}")


def print_session(session: dict[str, Any], command: str) -> None:
    if session["deleted"]:
        print(
            f"session {session['sessionId']}  deleted (generation {session['deletionGeneration']}) by "
            f"{session['deletedBy']}; restorable until {session['restorableUntil']}: resumable restore "
            f"{session['sessionId']}"
        )
    else:
        kept = f"until {session['purgeAt']}" if session.get("purgeAt") else "while a turn is active"
        said = "restored, as it was when deleted" if command == "restore" else "not deleted"
        print(f"session {session['sessionId']}  {said}; its records are kept {kept}")


def print_dismissed(interaction: dict[str, Any]) -> None:
    what = interaction.get("summary") or interaction.get("name")
    if interaction.get("dismissedByYou"):
        print(
            f"dismissed {what} ({interaction['requestId']}): hidden from your inbox, still waiting for others "
            f"(resumable dismiss {interaction['requestId']} --undo brings it back)"
        )
    else:
        print(f"{what} ({interaction['requestId']}) is in your inbox again")
