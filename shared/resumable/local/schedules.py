"""template.yaml's schedules on the embedded AWS: each function's ``Schedule`` event runs its handler in
this process, on a timer, with the event EventBridge would send (``rate(...)`` expressions; a
``cron(...)`` one is left out locally, saying so).
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from resumable.local.functions import ACCOUNT, LambdaContext, function_arn, functions, load_handler, load_template

logger = logging.getLogger(__name__)

_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True)
class Schedule:
    """A function the template runs on a schedule, every ``seconds``."""

    function: str
    seconds: float


def rate_seconds(expression: str) -> float | None:
    """The period of a ``rate(...)`` schedule expression, in seconds; None for any other."""
    match = _RATE.match(expression.strip())
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")]


def schedules(template: dict[str, Any] | None = None) -> list[Schedule]:
    """Every ``Schedule`` event of the template's functions (a parameter's default where it refers to one)."""
    template = template or load_template()
    parameters = template.get("Parameters", {})
    found = []
    for name in functions(template):
        for event in template["Resources"][name]["Properties"].get("Events", {}).values():
            if event.get("Type") != "Schedule":
                continue
            expression = str(event["Properties"]["Schedule"])
            expression = str(parameters.get(expression, {}).get("Default", expression))
            seconds = rate_seconds(expression)
            if seconds is None:
                logger.warning("%s's schedule %r is not a rate(...): it does not run locally", name, expression)
                continue
            found.append(Schedule(name, seconds))
    return found


def scheduled_event(function: str) -> dict[str, Any]:
    """The event an EventBridge schedule sends a function."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [f"arn:aws:events:us-east-1:{ACCOUNT}:rule/{function}Schedule"],
        "detail": {},
    }


@contextmanager
def running_schedules(every: float | None = None) -> Iterator[list[Schedule]]:
    """Run each scheduled function on a thread of its own until the block ends (``every``: this
    period instead of the template's)."""
    stop = threading.Event()
    found = schedules()
    handlers = {name: load_handler(f) for name, f in functions(load_template()).items()}

    def run(schedule: Schedule) -> None:
        while not stop.wait(every or schedule.seconds):
            arn = function_arn(schedule.function)
            context = LambdaContext(schedule.function, uuid.uuid4().hex, invoked_function_arn=arn)
            try:
                handlers[schedule.function](scheduled_event(schedule.function), context)
            except Exception:
                logger.exception("the scheduled run of %s failed (it runs again on schedule)", schedule.function)

    threads = [threading.Thread(target=run, args=(s,), name=f"schedule-{s.function}", daemon=True) for s in found]
    for thread in threads:
        thread.start()
    try:
        yield found
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
