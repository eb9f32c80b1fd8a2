"""``make smoke``: after a deploy, a turn end to end against the stack, signed, as a person would take it
with the ``resumable`` command: start a turn with a prompt, print each question as the desk shows it,
answer as told, wait until the turn settles, then delete the session. Each step is printed with the
command it runs; the first that fails stops the smoke test, named, with what the API said.

    make smoke                                                  # the demo's agents: delete the test-db record, approved
    make smoke ARGS="--prompt 'refund order A-1001'"            # your agents: each question approved
    make smoke ARGS="--prompt 'refund order A-1001' --deny 'not now'"    # ... each denied, with that message
    make smoke ARGS="--prompt 'refund order A-1001' --leave"    # ... stop at the first question: it stays waiting
    make smoke ARGS="--stack my-stack"                          # another stack (default: samconfig.toml's)
    RESUMABLE_TOKEN=$TOKEN make smoke ARGS="--url https://..."  # AuthMode JWT: a signed-in token

The smoke test answers its own questions, as the session's owner (no approver is needed, unless an
approval rule says otherwise). With no ``--prompt``, it expects the demo's agents (AgentFactory's
default), whose ``delete the test-db record`` asks once. A token (``--token`` or RESUMABLE_TOKEN)
reaches each ``resumable`` command as RESUMABLE_TOKEN, never on its command line, and is printed nowhere.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
import uuid
from pathlib import Path
from typing import Any

from resumable.cli.printed import print_turn

DEMO_PROMPT = "delete the test-db record"
# How many questions one smoke turn answers before it calls the agents' asking endless.
MOST_ROUNDS = 10


class SmokeError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--stack", default=None, help="the CloudFormation stack (default: samconfig.toml's, or resumable)"
    )
    where.add_argument("--url", help="the HTTP API's URL instead of a stack's ApiUrl output")
    parser.add_argument("--region", help="the stack's region")
    parser.add_argument(
        "--token",
        help="a sign-in token (AuthMode JWT). Prefer RESUMABLE_TOKEN, its default: on the command line, other "
        "users see it (ps) and the shell's history keeps it",
    )
    parser.add_argument("--sign", action="store_true", help="sign with SigV4 even for a local URL")
    parser.add_argument("--prompt", help=f"the turn's prompt (default: the demo's {DEMO_PROMPT!r})")
    answer = parser.add_mutually_exclusive_group()
    answer.add_argument("--approve", action="store_true", help="approve each question (the default)")
    answer.add_argument("--deny", metavar="MESSAGE", help="deny each question, telling the agent MESSAGE")
    answer.add_argument("--leave", action="store_true", help="stop at the first question and leave it waiting")
    parser.add_argument("--timeout", type=float, default=300, help="how long to wait for the turn to settle (s)")
    args = parser.parse_args(argv)
    if args.deny is not None and not args.deny.strip():
        parser.error("--deny needs a message for the agent")
    stack, region = _deployed()
    target = ["--url", args.url] if args.url else ["--stack", args.stack or stack]
    region = args.region or (None if args.url else region or os.environ.get("AWS_REGION"))
    target += ["--region", region] if region else []
    target += ["--sign"] if args.sign else []
    given = os.environ.get("RESUMABLE_TOKEN")
    if args.token:  # each resumable command reads it there, never from its command line
        os.environ["RESUMABLE_TOKEN"] = args.token
    session = f"smoke-{uuid.uuid4().hex[:12]}"
    began = time.monotonic()
    try:
        settled = _take(args, target, session)
    except SmokeError as failed:
        print(f"smoke: FAILED: {failed}", file=sys.stderr)
        print(f"smoke: its session {session} was left as it stood (resumable show/delete {session})", file=sys.stderr)
        return 1
    finally:  # (this process's environment as it was: a caller that goes on sends no token it did not give)
        if given is None:
            os.environ.pop("RESUMABLE_TOKEN", None)
        else:
            os.environ["RESUMABLE_TOKEN"] = given
    if settled is None:
        print(f"smoke: passed in {time.monotonic() - began:.1f} s: started, asked, left waiting ({session})")
        return 0
    print(f"smoke: passed in {time.monotonic() - began:.1f} s: started, {settled}, deleted ({session})")
    return 0


def _take(args: argparse.Namespace, target: list[str], session: str) -> str | None:
    """The turn taken from its start to its settlement (what happened, in words), or None where it was
    left waiting as told."""
    prompt = args.prompt or DEMO_PROMPT
    turn = _step("start a turn, until it asks or settles", target, "start", "--wait", session, "--", prompt)
    print_turn(turn)
    if args.prompt is None and (turn.get("status") != "waiting" or len(_asking(turn)) != 1):
        raise SmokeError(
            f"the turn is {turn.get('status')!r} with {len(_asking(turn))} open questions, not waiting on one: is "
            "AgentFactory the demo's? (for your own agents, give --prompt; its output: "
            + repr(turn.get("error") or turn.get("output"))
            + ")"
        )
    said: list[str] = []
    while True:
        if turn.get("status") == "running":
            turn = _settled(target, turn, args.timeout)
        asking = _asking(turn)
        if turn.get("status") != "waiting" or not asking:
            break
        if args.leave:
            print(f"smoke: left waiting, as told: answer it with resumable approve {asking[0]['requestId']}")
            return None
        if len(said) >= MOST_ROUNDS:
            raise SmokeError(f"the turn still asks after {len(said)} answers: it asks without end")
        for question in asking:
            turn = _answer(args, target, turn, question)
            said.append("approved" if args.deny is None else "denied")
        print_turn(turn)
    if turn.get("status") != "completed":
        raise SmokeError(
            f"the turn settled {turn.get('status')!r}, not completed: {turn.get('error') or turn.get('output')}"
        )
    told = "approved" if args.deny is None else "denied"
    if args.prompt is None and turn.get("interactions", [{}])[0].get("decision") != told:
        raise SmokeError(f"the question reads {turn['interactions'][0].get('decision')!r}, not {told}")
    _step("delete the smoke session", target, "delete", session)
    return f"{' and '.join(said) or 'nothing asked'}, completed"


def _asking(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in turn.get("interactions", []) if i.get("status") == "requested"]


def _answer(args: argparse.Namespace, target: list[str], turn: dict[str, Any], question: dict[str, Any]) -> Any:
    ids = [turn["sessionId"], question["turnId"], question["requestId"]]
    if args.deny is not None:
        return _step(f"deny {question['requestId']}", target, "deny", *ids, f"--message={args.deny}")
    return _step(f"approve {question['requestId']}", target, "approve", *ids, "--yes")


def _settled(target: list[str], turn: dict[str, Any], timeout: float) -> dict[str, Any]:
    """The turn read again until it no longer runs (a continuation finishes it), for ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while turn.get("status") == "running":
        if time.monotonic() > deadline:
            raise SmokeError(f"the turn still runs after {timeout:.0f} s: see the runbook's 'a turn stays running'")
        time.sleep(1)
        turn = _step("read the turn until it settles", target, "show", turn["sessionId"], turn["turnId"], quiet=True)
    return turn


def _deployed() -> tuple[str, str | None]:
    """The stack and region sam deploy saved in samconfig.toml (defaults: resumable, and AWS's own)."""
    try:
        config = tomllib.loads((Path(__file__).resolve().parents[1] / "samconfig.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return "resumable", None
    merged = {**config.get("default", {}).get("global", {}).get("parameters", {})}
    merged |= config.get("default", {}).get("deploy", {}).get("parameters", {})
    return str(merged.get("stack_name", "resumable")), merged.get("region")


def _step(what: str, target: list[str], *command: str, quiet: bool = False) -> dict[str, Any]:
    argv = [sys.executable, "-m", "resumable.cli", *target, "--json", *command]
    if not quiet:
        print(f"smoke: {what}: resumable {' '.join(argv[3:])}", flush=True)
    began = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    except subprocess.TimeoutExpired:
        raise SmokeError(f"{what}: the command did not answer in 300 s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()
        raise SmokeError(f"{what}: the command exited {done.returncode}: {said}")
    if not quiet:
        print(f"smoke: {what}: ok ({time.monotonic() - began:.1f} s)", flush=True)
    try:
        reply: dict[str, Any] = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        raise SmokeError(f"{what}: the command printed what is not JSON: {done.stdout.strip()[:300]}") from None
    return reply


if __name__ == "__main__":
    sys.exit(main())
