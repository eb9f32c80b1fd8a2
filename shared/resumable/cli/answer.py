"""Answering from the terminal: ``approve``, ``deny``, ``respond`` and ``dismiss`` a question by its
request id alone (the command asks the API for its session and turn) or with its session and turn.

Approving a question that needs a confirmation (a ``destructive`` tool, or a rule's ``confirm``) asks
you to type what it acts on, on a terminal; a script says ``--yes``, else nothing is sent. An edited
input is shown as a diff of the input asked before it is sent.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

from resumable.cli import grants
from resumable.cli.client import Api, Reply, part

REREADS: tuple[float, ...] = (0.5, 1.0, 1.5)
"""The pauses before asking again for a request id the API did not find: it finds a question through an
index, which lists one a moment after it is asked (on DynamoDB, usually well within a second)."""

_IDS_HELP = "REQUEST (as resumable inbox lists it), or SESSION TURN REQUEST"


class RefusedError(Exception):
    """Nothing was sent: the command line, or the person at the terminal, did not say enough."""


def add_commands(commands: Any) -> None:
    approve = commands.add_parser("approve", help="approve a question (--input: with an edited input)")
    approve.add_argument("ids", nargs="+", metavar="ID", help=_IDS_HELP)
    approve.add_argument("--input", help='the edited input, a JSON object: \'{"name": "prod-db-replica"}\'')
    approve.add_argument("--message", help="a note told to the model")
    approve.add_argument(
        "--yes", action="store_true", help="approve without the confirmation a destructive question asks for"
    )
    grants.add_options(approve)
    deny = commands.add_parser("deny", help="deny a question, saying why")
    deny.add_argument("ids", nargs="+", metavar="ID", help=_IDS_HELP)
    deny.add_argument("--message", required=True)
    respond = commands.add_parser("respond", help="answer a question that is not an approval, in words")
    respond.add_argument("ids", nargs="+", metavar="ID", help=_IDS_HELP)
    respond.add_argument("--text", required=True, help="the reply the agent is given")
    dismiss = commands.add_parser("dismiss", help="hide a question you will not answer from your inbox")
    dismiss.add_argument("ids", nargs="+", metavar="ID", help=_IDS_HELP)
    dismiss.add_argument("--undo", action="store_true", help="show it in your inbox again")


COMMANDS = ("approve", "deny", "respond", "dismiss")


def run(api: Api, options: argparse.Namespace) -> Reply:
    """Find the question, check what the command needs of it, then send the answer (or dismissal)."""
    grant = grants.grant_of(options) if options.command == "approve" else None
    session, turn, request, question = _find(api, options.ids)
    path = f"/sessions/{part(session)}/turns/{part(turn)}/interactions/{part(request)}"
    if options.command == "dismiss":
        return api.call("DELETE" if options.undo else "POST", f"{path}/dismiss")
    if options.command == "respond":
        if question is not None and question.get("name") == "approval":
            raise RefusedError(f"question {request} is an approval: resumable approve or deny it")
        return api.call("POST", path, {"response": options.text})
    response: dict[str, Any] = {"decision": options.command}
    grants.check_grant(question if question is not None and question.get("status") == "requested" else None, grant)
    if options.command == "deny" and not options.message.strip():
        raise RefusedError("--message is blank: say why (the agent is told it)")
    if question is not None and question.get("status") != "requested":
        if question.get("status") == "answered":  # (the same answer again is taken as a retry: say so)
            print(
                f"question {request} was already answered by {question.get('answeredBy')} at "
                f"{question.get('answeredAt')}; the API takes only the same answer again",
                file=sys.stderr,
            )
        question = None  # (answered, expired or superseded: the API says so; nothing to confirm)
    if options.command == "approve":
        if options.input is not None:
            try:
                response["input"] = json.loads(options.input)
            except ValueError as error:
                raise ValueError(f"--input is not JSON ({error})") from error
            if not isinstance(response["input"], dict):
                raise ValueError('--input must be a JSON object, the tool\'s whole input: \'{"name": "..."}\'')
            if question is not None and question.get("editable") is False:
                raise RefusedError(f"question {request}'s input may not be edited: approve or deny it as asked")
            _show_edit(question, response["input"], options.yes)
        if question is not None and question.get("confirm") and not options.yes:
            _confirm(question, response.get("input"), grant)
    if options.message is not None:
        response["message"] = options.message
    if grant is None:
        return api.call("POST", path, {"response": response})
    reply = api.call("POST", path, {"response": response, "grant": grant})
    if reply.status == 200:
        grants.say_granted(api, request)
    return reply


def _find(api: Api, ids: list[str]) -> tuple[str, str, str, dict[str, Any] | None]:
    """The question's session, root turn and request id, and the question as the API shows it (None
    when its turn holds no such question: the answer is then sent as given, and the API says it is
    not found). A turn that cannot be read is an error: nothing is sent unconfirmed."""
    if len(ids) == 3:
        session, turn, request = ids
        reply = api.call("GET", f"/sessions/{part(session)}/turns/{part(turn)}")
        if reply.status != 200 or not isinstance(reply.body, dict):
            raise UnreadError(reply)
        listed = reply.body.get("interactions", [])
        return session, turn, request, next((i for i in listed if i.get("requestId") == request), None)
    if len(ids) != 1:
        raise ValueError(f"give {_IDS_HELP}; got {len(ids)} ids")
    [request] = ids
    reply = question(api, request)
    if reply.status == 404:
        raise RefusedError(
            f"question {request} is not one you may see (asked {len(REREADS) + 1} times over {sum(REREADS):g} s: "
            "a wrong id, a session deleted or another's, or its retention over)"
        )
    if reply.status != 200 or not isinstance(reply.body, dict):
        raise UnreadError(reply)
    return reply.body["sessionId"], reply.body["turnId"], request, reply.body


def question(api: Api, request: str) -> Reply:
    """The API's reply for the question ``request`` (GET /interactions/{requestId}), asked again a few
    times while it is not found: one asked a moment ago may not be listed yet."""
    if not re.fullmatch(r"r[0-9a-f]{24}", request):
        raise ValueError(f"{request!r} is not a request id (r and 24 hex digits, as resumable inbox lists them)")
    for pause in REREADS:
        reply = api.call("GET", f"/interactions/{part(request)}")
        if reply.status != 404:
            return reply
        time.sleep(pause)
    return api.call("GET", f"/interactions/{part(request)}")


class UnreadError(Exception):
    """The question could not be read (to find its session and turn, and what it asks): the reply says why."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


def _confirm(question: dict[str, Any], edited: Any = None, grant: dict[str, Any] | None = None) -> None:
    """Ask the person at the terminal to type what the approval acts on (the first text of the input
    that runs: ``edited``, else the one asked; else the tool's name); refuse without a terminal."""
    given = question.get("reason")
    reason: dict[str, Any] = given if isinstance(given, dict) else {}
    tool = str(reason.get("tool") or question.get("name"))
    runs = edited if edited is not None else reason.get("input")
    what = (
        f"{tool} {json.dumps(runs, ensure_ascii=False)}" if edited is not None else str(question.get("summary") or tool)
    )
    impact = f" ({question['impact']})" if question.get("impact") else ""
    risk = question.get("risk") or "marked for confirmation"
    also = f"; it also {grants.what_it_grants(grant, tool)}" if grant is not None else ""
    if not sys.stdin.isatty():
        raise RefusedError(
            f"approving runs {what}{impact}, which is {risk}{also}: pass --yes to approve it without a terminal"
        )
    target = next((v.strip() for v in _values(runs) if isinstance(v, str) and v.strip()), tool)
    print(f"Approving runs {what}{impact}: it is {risk}{also}.", file=sys.stderr)
    typed = _ask(f"Type {target} to approve it: ")
    if typed.strip() != target:
        raise RefusedError(f"you typed {typed.strip()!r}, not {target!r}: not approved")


def _show_edit(question: dict[str, Any] | None, edited: Any, yes: bool) -> None:
    """Print the edit as a diff of the input asked (on stderr); on a terminal, ask to go on."""
    reason = (question or {}).get("reason")
    if (
        not isinstance(reason, dict)
        or not isinstance(asked := reason.get("input"), dict)
        or not isinstance(edited, dict)
    ):
        return
    lines = edit_diff(asked, edited)
    print(f"your edit of {reason.get('tool')}'s input:", file=sys.stderr)
    print("\n".join(lines) if lines else "  (no change: the input asked)", file=sys.stderr)
    if sys.stdin.isatty() and not yes and _ask("Approve with this input? [y/N] ").strip().lower() not in ("y", "yes"):
        raise RefusedError("not approved")


def _ask(prompt: str) -> str:
    """What the person types after ``prompt`` (written to stderr, which shows control characters as
    escapes: a question's text never drives the terminal); end of input or Ctrl-C is a refusal."""
    print(prompt, end="", file=sys.stderr, flush=True)
    try:
        return input()
    except (EOFError, KeyboardInterrupt):
        print(file=sys.stderr)
        raise RefusedError("no answer was typed: not approved") from None


def _values(value: Any) -> list[Any]:
    """The values in ``value``, in order (an object's, a list's items, nested)."""
    if isinstance(value, dict):
        return [v for item in value.values() for v in _values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _values(item)]
    return [value]


def edit_diff(asked: dict[str, Any], edited: dict[str, Any]) -> list[str]:
    """Each field the edit changes, removes or adds: ``- name: "prod-db"`` then ``+ name: "x"``."""
    lines = []
    for name in [*asked, *(k for k in edited if k not in asked)]:
        before, after = asked.get(name, _ABSENT), edited.get(name, _ABSENT)
        if before == after:
            continue
        if before is not _ABSENT:
            lines.append(f"  - {name}: {json.dumps(before, ensure_ascii=False)}")
        if after is not _ABSENT:
            lines.append(f"  + {name}: {json.dumps(after, ensure_ascii=False)}")
    return lines


_ABSENT = object()
