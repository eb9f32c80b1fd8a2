"""``make smoke``: after a deploy, one approval end to end against the stack, signed, as a person would
do it with the ``resumable`` command: start a turn of the demo agent, wait until it asks, approve,
see it complete, then delete the session. Each step is printed with the command it runs; the first
that fails stops the smoke test, named, with what the API said.

    make smoke                          # samconfig.toml's stack and region, signed with your credentials
    make smoke ARGS="--stack my-stack"  # another stack
    make smoke ARGS="--url https://... --token $TOKEN"   # AuthMode JWT: a signed-in token

The smoke test answers its own question, as the session's owner (no approver is needed); the agent
factory must be the demo's (AgentFactory's default), whose ``delete the test-db record`` asks.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tomllib
import uuid
from pathlib import Path
from typing import Any

PROMPT = "delete the test-db record"


class SmokeError(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--stack", default=None, help="the CloudFormation stack (default: resumable)")
    where.add_argument("--url", help="the HTTP API's URL instead of a stack's ApiUrl output")
    parser.add_argument("--region", help="the stack's region")
    parser.add_argument("--token", help="a sign-in token (AuthMode JWT)")
    parser.add_argument("--sign", action="store_true", help="sign with SigV4 even for a local URL")
    args = parser.parse_args(argv)
    stack, region = _deployed()
    target = ["--url", args.url] if args.url else ["--stack", args.stack or stack]
    region = args.region or (None if args.url else region)
    target += ["--region", region] if region else []
    target += ["--token", args.token] if args.token else []
    target += ["--sign"] if args.sign else []
    session = f"smoke-{uuid.uuid4().hex[:12]}"
    began = time.monotonic()
    try:
        started = _step("start a turn, until it asks", target, "start", session, PROMPT, "--wait")
        asked = [i for i in started.get("interactions", []) if i.get("status") == "requested"]
        if started.get("status") != "waiting" or len(asked) != 1:
            raise SmokeError(
                f"the turn is {started.get('status')!r} with {len(asked)} open questions, not waiting on one: is "
                "AgentFactory the demo's? (its output: " + repr(started.get("error") or started.get("output")) + ")"
            )
        ids = [session, started["turnId"], asked[0]["requestId"]]
        done = _step("approve it", target, "approve", *ids, "--yes")
        if done.get("status") != "completed":
            raise SmokeError(f"after the approval the turn is {done.get('status')!r}, not completed: {done}")
        shown = _step("read the turn back", target, "show", session, started["turnId"])
        if shown.get("interactions", [{}])[0].get("decision") not in ("approved", None):
            raise SmokeError(f"the question reads {shown['interactions'][0].get('decision')!r}, not approved")
        _step("delete the smoke session", target, "delete", session)
    except SmokeError as failed:
        print(f"smoke: FAILED: {failed}", file=sys.stderr)
        return 1
    print(
        f"smoke: passed in {time.monotonic() - began:.1f} s: started, asked, approved, completed, deleted ({session})"
    )
    return 0


def _deployed() -> tuple[str, str | None]:
    """The stack and region sam deploy saved in samconfig.toml (defaults: resumable, and AWS's own)."""
    try:
        config = tomllib.loads((Path(__file__).resolve().parents[1] / "samconfig.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return "resumable", None
    merged = {**config.get("default", {}).get("global", {}).get("parameters", {})}
    merged |= config.get("default", {}).get("deploy", {}).get("parameters", {})
    return str(merged.get("stack_name", "resumable")), merged.get("region")


def _step(what: str, target: list[str], *command: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "resumable.cli", *target, "--json", *command]
    words = argv[3:]
    shown = " ".join("***" if n and words[n - 1] == "--token" else word for n, word in enumerate(words))
    print(f"smoke: {what}: resumable {shown}", flush=True)
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()
        raise SmokeError(f"{what}: the command exited {done.returncode}: {said}")
    print(f"smoke: {what}: ok ({time.monotonic() - began:.1f} s)", flush=True)
    reply: dict[str, Any] = json.loads(done.stdout) if done.stdout.strip() else {}
    return reply


if __name__ == "__main__":
    sys.exit(main())
