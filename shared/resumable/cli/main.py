"""resumable: read the inbox, show a turn, approve (optionally with an edited input), deny, respond to
or dismiss a question (by its request id alone), start, cancel, delete and restore a session, follow
the local run's events, and the operator's commands (resumable admin; docs/runbook.md), against an
HTTP API of resumable.

Exit codes: 0 done; 2 bad input (the API's 400 or 422, or the command line's, a destructive approval
not confirmed, or a request id alone not in your inbox: nothing was sent); 3 not found (404);
4 conflict (409: answered differently, or the turn is busy); 5 gone (410: canceled or expired);
6 not allowed (401, 403); 1 anything else (an AWS failure, the API unreachable).
"""

from __future__ import annotations

import argparse
import getpass
import ipaddress
import itertools
import json
import os
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from resumable.cli import admin, answer, grants, printed, verify
from resumable.cli.client import LOCAL_URL, Api, Reply, UnreachableError, default_url, part, stack_url

EXIT_CODES = {400: 2, 422: 2, 404: 3, 409: 4, 410: 5, 401: 6, 403: 6}
_WAIT_POLL_SECONDS = 1.0
_PLAIN_PROGRESS_SECONDS = 10.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(  # (no abbreviations: admin audit verify's --to is not --token)
        prog="resumable", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False
    )
    parser.add_argument(
        "--url", help=f"the HTTP API (default RESUMABLE_URL, else the local run that serves, else {LOCAL_URL})"
    )
    parser.add_argument("--stack", help="use this CloudFormation stack's ApiUrl output")
    parser.add_argument("--region", help="the AWS region to sign for and read the stack in")
    parser.add_argument("--token", help=argparse.SUPPRESS)  # refused (see _main): only to say so
    parser.add_argument(
        "--token-stdin",
        action="store_true",
        help="read a bearer token (JWT APIs) from standard input, one line (default RESUMABLE_TOKEN; never on the "
        "command line, where other users see it)",
    )
    parser.add_argument(
        "--sign",
        action="store_true",
        help="sign with SigV4 even for a local URL (a non-local URL always is, unless a token is given)",
    )
    parser.add_argument("--json", action="store_true", help="print the API's reply as JSON")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inbox = commands.add_parser("inbox", help="the open questions you may answer, most urgent first")
    inbox.add_argument("--limit", type=int, default=50)
    inbox.add_argument("--cursor")
    inbox.add_argument("--dismissed", action="store_true", help="also the questions you dismissed")
    inbox.add_argument(
        "--started",
        action="store_true",
        help="instead: the open questions of the turns you started (deny to withdraw one, or cancel its turn)",
    )
    show = commands.add_parser(
        "show", help="a turn (SESSION TURN): its status, output, questions and child turns; or one question (REQUEST)"
    )
    show.add_argument(
        "ids", nargs="+", metavar="ID", help="SESSION TURN, or REQUEST (as Slack, e-mail, events name it)"
    )
    talk = commands.add_parser("conversation", help="a turn's messages so far (a child turn's: its sub-agent's)")
    talk.add_argument("session"), talk.add_argument("turn")
    talk.add_argument("--before", type=int, help="the messages before this position (default: the latest)")
    talk.add_argument("--limit", type=int, default=20)
    answer.add_commands(commands)
    start = commands.add_parser("start", help="start a turn")
    start.add_argument("session"), start.add_argument("prompt")
    start.add_argument("--wait", action="store_true", help="poll while it runs, until it waits or settles")
    cancel = commands.add_parser("cancel", help="cancel a turn and every child turn")
    cancel.add_argument("session"), cancel.add_argument("turn")
    delete = commands.add_parser("delete", help="delete a session (its active turn canceled first); restorable")
    delete.add_argument("session")
    restore = commands.add_parser("restore", help="bring a deleted session back, as it was")
    restore.add_argument("session")
    admin.add_commands(commands)
    grants.add_commands(commands)
    events = commands.add_parser("events", help="follow the local run's events (its queue, found by itself)")
    events.add_argument(
        "--queue",
        default=os.environ.get("RESUMABLE_EVENTS_QUEUE"),
        help="another queue than the serving local run's (RESUMABLE_EVENTS_QUEUE)",
    )
    events.add_argument("--once", action="store_true", help="read what is there, then stop")
    return parser


def _api(options: argparse.Namespace) -> Api:
    if options.url:
        url, named = options.url, "--url"
    elif options.stack:
        url, named = stack_url(options.stack, options.region), f"stack {options.stack}'s ApiUrl"
    else:
        url, named = default_url(), "RESUMABLE_URL" if os.environ.get("RESUMABLE_URL") else "the local run's URL"
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{named} {url!r} is not an http:// or https:// address, such as {LOCAL_URL}")
    local = parsed.scheme == "http" and _loopback(parsed.hostname)
    if parsed.scheme == "http" and not local:
        raise ValueError(
            f"{named} {url} is plain HTTP to a remote host: your signature or token would travel unencrypted: use "
            "its https:// address (plain http:// is for this machine only: 127.0.0.1, localhost, [::1])"
        )
    token = _token(options)
    return Api(url, token=token, sign=not token and (options.sign or not local), region=options.region)


def _loopback(host: str) -> bool:
    """Whether ``host`` (a URL's parsed hostname: lowercase, without brackets) is this machine's own:
    localhost, 127.0.0.0/8 or ::1. A name that only begins like one (localhost.evil.com) is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(options: argparse.Namespace) -> str | None:
    """The bearer token: with --token-stdin, one line of standard input (typed without echo on a
    terminal); else RESUMABLE_TOKEN; else none (the request is signed, or goes to the local run as is)."""
    if not options.token_stdin:
        return os.environ.get("RESUMABLE_TOKEN") or None
    token = (getpass.getpass("token: ") if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not token:
        raise ValueError(
            "--token-stdin read no token from standard input: give it there (resumable --token-stdin inbox "
            "< token-file), or set RESUMABLE_TOKEN"
        )
    return token


def _wait(api: Api, reply: Reply) -> Reply:
    """Poll the turn while it runs, saying so on stderr: a progress line redrawn in place on a
    terminal; otherwise (a log, a script's capture) a plain line now and then."""
    spinner = itertools.cycle("|/-\\")
    started = time.monotonic()
    terminal = sys.stderr.isatty()
    said = -_PLAIN_PROGRESS_SECONDS
    while reply.status < 300 and reply.body.get("status") == "running":
        running = time.monotonic() - started
        if terminal:
            sys.stderr.write(f"\r{next(spinner)} running for {running:.0f} s")
        elif running - said >= _PLAIN_PROGRESS_SECONDS:
            sys.stderr.write(f"turn {reply.body['turnId']} running for {running:.0f} s\n")
            said = running
        sys.stderr.flush()
        time.sleep(_WAIT_POLL_SECONDS)
        reply = api.call("GET", f"/sessions/{part(reply.body['sessionId'])}/turns/{part(reply.body['turnId'])}")
    if terminal:
        sys.stderr.write("\r" + " " * 40 + "\r")
    return reply


def _events(options: argparse.Namespace) -> int:
    if not options.queue:
        from resumable.local_runs import serving

        runs = serving()
        options.queue = runs[0].events_queue_url if runs else None
    if not options.queue:
        print(
            "resumable events: no local run serves here (start one with make run), and no queue was named "
            "(--queue, or RESUMABLE_EVENTS_QUEUE: the queue a make run printed)",
            file=sys.stderr,
        )
        return 2
    try:
        from resumable.local.events import line, read_events  # the local run's queue: local only
    except ImportError:
        print("resumable events reads the local run's queue: install resumable with its local extra", file=sys.stderr)
        return 1
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        for event in read_events(options.queue, follow=not options.once):
            print(json.dumps(event) if options.json else line(event), flush=True)
    except KeyboardInterrupt:
        pass
    except (BotoCoreError, ClientError, ValueError) as error:
        print(
            f"resumable events: could not read the queue {options.queue!r} ({error}); make run prints its URL "
            "(RESUMABLE_EVENTS_QUEUE), and it lasts as long as that make run",
            file=sys.stderr,
        )
        return 2 if isinstance(error, ValueError) else 1
    return 0


class _Harmless:
    """A stream that writes control and format characters (an escape sequence, NUL, a bidi override)
    as escapes (``\\x1b``): what a turn, a question or an error says is shown to the person at the
    terminal, never obeyed by it. ``keep`` is what the command itself writes (new lines)."""

    def __init__(self, stream: Any, keep: str) -> None:
        self.stream = stream
        self.keep = keep

    def write(self, text: str) -> int:
        return int(self.stream.write("".join(_harmless(c, self.keep) for c in text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _harmless(character: str, keep: str) -> str:
    if character.isprintable() or character in keep:
        return character
    return character.encode("unicode_escape").decode("ascii")


def main(argv: list[str] | None = None) -> int:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Harmless(out, "\n\t"), _Harmless(err, "\n\t\r")
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (| head): what it did not read is not an error
        sys.stderr.close()
        return 0
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    if options.token is not None:
        print(
            "resumable: --token puts the token on the command line, where other users see it (ps) and your shell's "
            "history keeps it: set RESUMABLE_TOKEN, or give it on standard input with --token-stdin "
            "(resumable --token-stdin inbox < token-file); nothing was sent",
            file=sys.stderr,
        )
        return 2
    if options.command == "events":
        return _events(options)
    try:
        api = _api(options)
        if options.command == "admin" and options.verb == "dead-letters":
            return admin.dead_letters(api, options)
        if options.command == "admin" and options.verb == "audit" and options.check == "verify":
            return verify.verify(api, options, EXIT_CODES)
        if options.command == "admin" and options.verb == "audit":
            return admin.audit(api, options, EXIT_CODES, printed.table)
        reply = _run(api, options)
    except UnreachableError as error:
        print(f"resumable: {error}", file=sys.stderr)
        return 1
    except answer.UnreadError as unread:
        reply = unread.reply
    except answer.RefusedError as refused:
        print(f"resumable: {refused}; nothing was sent", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"resumable: {error}; nothing was sent", file=sys.stderr)
        return 2
    if reply.status >= 300:
        body = reply.body if isinstance(reply.body, dict) else {}
        # API Gateway's own refusals (a bad signature, a missing token) carry a message and no code.
        code = body.get("code") or {401: "unauthorized", 403: "forbidden"}.get(reply.status, "error")
        print(
            json.dumps(reply.body) if options.json else f"{reply.status} {code}: {body.get('message')}",
            file=sys.stdout if options.json else sys.stderr,
        )
        return EXIT_CODES.get(reply.status, 1)
    if options.json:
        print(json.dumps(reply.body, indent=2))
    elif options.command == "inbox":
        printed.print_inbox(reply.body)
    elif options.command in ("delete", "restore"):
        printed.print_session(reply.body, options.command)
    elif options.command == "dismiss":
        printed.print_dismissed(reply.body)
    elif options.command == "conversation":
        printed.print_conversation(reply.body)
    elif options.command == "admin":
        admin.show(options, reply.body, printed.table, printed.print_turn)
    elif options.command in ("grants", "revoke"):
        grants.show(options, reply.body)
    elif options.command == "show" and len(options.ids) == 1:
        printed.print_question(reply.body)
    else:
        printed.print_turn(reply.body)
    return 0


def _run(api: Api, options: argparse.Namespace) -> Reply:
    def turn() -> str:
        return f"/sessions/{part(options.session)}/turns/{part(options.turn)}"

    if options.command == "inbox":
        query = (
            f"?status=requested&limit={options.limit}"
            + (f"&cursor={part(options.cursor)}" if options.cursor else "")
            + ("&dismissed=true" if options.dismissed else "")
            + ("&started=true" if options.started else "")
        )
        return api.call("GET", "/interactions" + query)
    if options.command == "show" and len(options.ids) == 1:
        return answer.question(api, options.ids[0])
    if options.command == "show":
        if len(options.ids) != 2:
            raise ValueError(f"give SESSION TURN (a turn) or REQUEST (a question); got {len(options.ids)} ids")
        options.session, options.turn = options.ids
        return api.call("GET", turn())
    if options.command == "conversation":
        before = f"&before={options.before}" if options.before is not None else ""
        return api.call("GET", f"{turn()}/conversation?limit={options.limit}{before}")
    if options.command in answer.COMMANDS:
        return answer.run(api, options)
    if options.command == "start":
        reply = api.call("POST", f"/sessions/{part(options.session)}/turns", {"prompt": options.prompt})
        return _wait(api, reply) if options.wait else reply
    if options.command == "delete":
        return api.call("DELETE", f"/sessions/{part(options.session)}")
    if options.command == "restore":
        return api.call("POST", f"/sessions/{part(options.session)}/restore")
    if options.command == "admin":
        return admin.call(api, options)
    if options.command in ("grants", "revoke"):
        return grants.call(api, options)
    return api.call("POST", f"{turn()}/cancel")
