"""``make invoke FUNCTION=StartTurn EVENT=events/start_turn.json``: run one handler like
``sam local invoke`` does, against the embedded AWS, and print its reply.

FUNCTION is a function's logical id in template.yaml, with or without the ``Function`` suffix. The
event is an API Gateway HTTP API event (events/*.json) or a direct invocation's, as Step Functions
sends it (events/stepfunctions/*.json).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from resumable.local.embedded_aws import embedded_aws
from resumable.local.functions import LambdaContext, functions, load_handler, load_template


def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
    """The reply of ``function``'s handler to ``event`` (the caller provides the AWS settings)."""
    declared = functions(load_template())
    found = declared.get(function) or declared.get(f"{function}Function")
    if found is None:
        known = sorted(name.removesuffix("Function") for name in declared)
        raise SystemExit(f"no function {function!r} in template.yaml; the functions are {known}")
    return load_handler(found)(event, LambdaContext(found.name, "invoke"))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: make invoke FUNCTION=<logical id> EVENT=<events/file.json>", file=sys.stderr)
        return 2
    event = json.loads(Path(argv[1]).read_text())
    with embedded_aws() as settings:
        os.environ.update(settings.environment())
        reply = invoke(argv[0], event)
    body = reply.get("body")
    if isinstance(body, str) and body.startswith(("{", "[")):
        reply["body"] = json.loads(body)
    print(json.dumps(reply, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
