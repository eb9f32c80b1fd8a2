"""Standing grants from the terminal: ``resumable grants`` lists those you may see, ``resumable revoke
GRANT`` revokes one at once, and ``resumable approve REQUEST --grant 1h`` gives one with an approval
(docs/approval-rules.md#standing-grants)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from resumable.cli.client import Api, Reply, part
from resumable.cli.printed import table, until


def add_commands(commands: Any) -> None:
    listed = commands.add_parser("grants", help="the standing grants you may see: which tools run without a question")
    listed.add_argument("--all", action="store_true", help="also those revoked or expired (kept a week)")
    revoke = commands.add_parser("revoke", help="revoke a standing grant now (its grantor or an approver)")
    revoke.add_argument("grant", metavar="GRANT", help="the grant's id, as resumable grants lists it")


def add_options(approve: argparse.ArgumentParser) -> None:
    """``approve``'s options that give a grant with the approval."""
    approve.add_argument(
        "--grant",
        metavar="DURATION",
        help="also let this tool's later calls run without a question for DURATION (90s, 30m, 8h, 2d), where "
        "the question's rule allows grants",
    )
    approve.add_argument(
        "--grant-scope",
        choices=("session", "principal"),
        default="session",
        help="the grant's scope: this session (the default), or every session of its principal",
    )
    approve.add_argument(
        "--grant-inputs",
        metavar="JSON",
        help='only calls whose named input fields match these patterns: \'{"name": "orders-*"}\'',
    )


def grant_of(options: argparse.Namespace) -> dict[str, Any] | None:
    """The grant ``approve``'s options ask for (None: none), or a ValueError saying what is wrong (before
    anything is asked of the API)."""
    if options.grant is None:
        if options.grant_inputs is not None or options.grant_scope != "session":
            raise ValueError("--grant-scope and --grant-inputs go with --grant DURATION (--grant 1h)")
        return None
    said = options.grant.strip()
    if not re.fullmatch(r"\d+(\.\d+)?[smhd]?", said) or not float(said.rstrip("smhd")) > 0:
        raise ValueError(f"--grant {options.grant!r} is not a duration: give 90s, 30m, 8h or 2d (or seconds)")
    grant: dict[str, Any] = {"scope": options.grant_scope, "for": said if said[-1] in "smhd" else float(said)}
    if options.grant_inputs is not None:
        try:
            grant["inputs"] = json.loads(options.grant_inputs)
        except ValueError as error:
            raise ValueError(f"--grant-inputs is not JSON ({error})") from None
        if not isinstance(grant["inputs"], dict) or not all(isinstance(v, str) for v in grant["inputs"].values()):
            raise ValueError('--grant-inputs is a JSON object of field names to patterns: \'{"name": "orders-*"}\'')
    return grant


def check_grant(question: dict[str, Any] | None, grant: dict[str, Any] | None) -> None:
    """A ValueError where the question's rule allows no grant (the API would refuse it: 403)."""
    rule = (question or {}).get("rule") or {}
    if grant is not None and question is not None and not rule.get("grants"):
        named = f"its approval rule {rule['name']!r} allows none" if rule else "it has no approval rule"
        raise ValueError(f"question {question.get('requestId')} cannot carry a grant: {named}")


def what_it_grants(grant: dict[str, Any], tool: str) -> str:
    """The grant ``approve`` asks for, as its confirmation and its result say it."""
    where = "in this session" if grant["scope"] == "session" else "in every session of its principal"
    inputs = f" with inputs matching {json.dumps(grant['inputs'])}" if grant.get("inputs") else ""
    lasts = grant["for"] if isinstance(grant["for"], str) else f"{grant['for']:g} s"
    return f"lets {tool}{inputs} run without a question {where} for {lasts}"


def say_granted(api: Api, request: str) -> None:
    """After an approval with a grant: which grant it gave, and how to revoke it (on stderr)."""
    reply = api.call("GET", "/grants")
    mine = (
        [g for g in (reply.body or {}).get("grants", []) if g.get("requestId") == request]
        if reply.status == 200
        else []
    )
    for grant in mine:
        print(
            f"granted {grant['grantId']}: {grant['tool']} runs without a question until {grant['expiresAt']} "
            f"(resumable revoke {grant['grantId']})",
            file=sys.stderr,
        )


def call(api: Api, options: argparse.Namespace) -> Reply:
    if options.command == "revoke":
        if not re.fullmatch(r"g[0-9a-f]{24}", options.grant):
            raise ValueError(
                f"{options.grant!r} is not a grant id (g and 24 hex digits, as resumable grants lists them)"
            )
        return api.call("DELETE", f"/grants/{part(options.grant)}")
    return api.call("GET", "/grants" + ("?status=all" if options.all else ""))


def show(options: argparse.Namespace, body: dict[str, Any]) -> None:
    """A list of grants as a table; a revoked grant as one line."""
    if options.command == "revoke":
        print(f"grant {body['grantId']} ({body['tool']}) is {body['status']}: revoked by {body.get('revokedBy')}")
        return
    rows = [
        [
            g["grantId"],
            g["status"],
            g["tool"] + (f" {json.dumps(g['inputs'])}" if g.get("inputs") else ""),
            g["scope"] + (f" {g['sessionId']}" if g["scope"] == "session" else f" {g.get('principal')}"),
            f"{g['grantedBy']}{' (you)' if g.get('yours') else ''}",
            until(g["expiresAt"])
            if g["status"] == "live"
            else f"revoked {g.get('revokedAt')} by {g.get('revokedBy')}"
            if g["status"] == "revoked"
            else f"expired {g['expiresAt']}",
            g["rule"],
        ]
        for g in body.get("grants", [])
    ]
    if not rows:
        print("no standing grants" + ("" if options.all else " in force (--all: also those that ended)"))
        return
    print(table(rows, ["GRANT", "STATUS", "TOOL", "SCOPE", "GRANTED BY", "UNTIL", "RULE"]))
