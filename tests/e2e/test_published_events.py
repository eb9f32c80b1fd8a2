"""The local run publishes every change: turns started, answered and canceled over the local HTTP API
come out of the Publisher (the template's handler, fed from the table's stream) onto the embedded bus
and a queue subscribed to every event, each once, in order per session, as docs/events.md's table says."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from resumable.config import Settings
from resumable.events.schemas import MODELS, SCHEMAS, schema_file
from resumable.local.events import EventResources, line, publishing, read_events
from resumable.local.functions import ROOT
from tests.e2e.local_api import call
from tests.patience import HANG_SECONDS, eventually

APPROVE = {"response": {"decision": "approve"}}


@pytest.fixture(scope="module")
def local_run(handler_environment: Settings, url: str) -> Iterator[tuple[str, EventResources]]:
    """The local API with the template's Publisher reading the stream, as ``make run`` serves them."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("API_URL", url)
        with publishing(handler_environment) as (resources, _):
            yield url, resources


def _events(queue_url: str, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def enough() -> list[dict[str, Any]] | None:
        found.extend(read_events(queue_url, idle_seconds=0))
        return found if len({e["detail"]["eventId"] for e in found}) >= count else None

    return eventually(enough, f"{count} events on the queue")


def test_approve_deny_and_cancel_on_the_local_run_publish_each_event_once_in_order_per_session(
    local_run: tuple[str, EventResources],
) -> None:
    url, resources = local_run
    turns = {}
    for session in ("ev-approve", "ev-deny", "ev-cancel"):
        status, turn = call(url, "POST", f"/sessions/{session}/turns", {"prompt": "delete the prod-db record"})
        assert status == 201, turn
        turns[session] = turn
    approve = turns["ev-approve"]
    approval = f"/sessions/ev-approve/turns/{approve['turnId']}/interactions/{approve['interactions'][0]['requestId']}"
    assert call(url, "POST", approval, APPROVE)[1]["status"] == "completed"
    deny = turns["ev-deny"]
    answer = f"/sessions/ev-deny/turns/{deny['turnId']}/interactions/{deny['interactions'][0]['requestId']}"
    assert call(url, "POST", answer, {"response": {"decision": "deny", "message": "no"}})[0] == 200
    assert call(url, "POST", f"/sessions/ev-cancel/turns/{turns['ev-cancel']['turnId']}/cancel")[0] == 200

    events = _events(resources.events_queue_url, 9)
    assert resources.poller is not None
    resources.poller.caught_up(HANG_SECONDS)  # a duplicate, if any, is on the queue by now
    events += read_events(resources.events_queue_url, idle_seconds=0)
    assert len(events) == 9, "no event is delivered twice when nothing fails"
    schemas = {t: json.loads((SCHEMAS / schema_file(t)).read_text()) for t in MODELS}
    for event in events:
        jsonschema.validate(event["detail"], schemas[event["detail-type"]])
    per_session: dict[str, list[str]] = {}
    for event in sorted(events, key=lambda e: (e["detail"]["sessionId"], e["detail"]["sequence"])):
        per_session.setdefault(event["detail"]["sessionId"], []).append(line(event))
    asked = 'Interaction Requested  orchestrator -> db_admin wants to run delete_record {"name": "prod-db"}'
    assert per_session == {
        "ev-approve": [
            f"ev-approve  #1  {asked}",
            "ev-approve  #2  Interaction Answered  approve arn:aws:iam::000000000000:user/local",
            "ev-approve  #3  Turn Settled  completed record prod-db deleted",
        ],
        "ev-deny": [
            f"ev-deny  #1  {asked}",
            'ev-deny  #2  Interaction Answered  deny arn:aws:iam::000000000000:user/local saying "no"',
            "ev-deny  #3  Turn Settled  completed DENIED: no. The tool 'delete_record' did not run.",
        ],
        "ev-cancel": [
            f"ev-cancel  #1  {asked}",
            "ev-cancel  #2  Interaction Closed  superseded canceled on request",
            "ev-cancel  #3  Turn Settled  canceled canceled on request",
        ],
    }
    [requested] = [e for e in events if e["detail"]["sessionId"] == "ev-approve" and e["detail"]["sequence"] == 1]
    assert (requested["detail"]["answerPath"], requested["detail"]["answerUrl"]) == (approval, url + approval)
    assert requested["detail"]["inboxUrl"] == f"{url}/inbox#q-{approve['interactions'][0]['requestId']}"


def test_the_event_reader_make_run_prints_prints_one_line_per_event(local_run: tuple[str, EventResources]) -> None:
    url, resources = local_run
    status, turn = call(url, "POST", "/sessions/ev-reader/turns", {"prompt": "delete the prod-db record"})
    assert status == 201
    call(url, "POST", f"/sessions/ev-reader/turns/{turn['turnId']}/cancel")
    printed: list[str] = []

    def settled() -> bool | None:
        ran = subprocess.run(
            [sys.executable, "-m", "resumable.local.events", resources.events_queue_url],
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
            cwd=ROOT,
            check=True,
        )
        printed.extend(ran.stdout.splitlines())
        return True if any(p.startswith("ev-reader  #3  Turn Settled  canceled") for p in printed) else None

    eventually(settled, "the reader printing the canceled turn")
    assert [p.split("  ")[1] for p in printed if p.startswith("ev-reader ")] == ["#1", "#2", "#3"]


def test_the_reader_refuses_a_detail_type_resumable_does_not_publish_and_reads_nothing(
    local_run: tuple[str, EventResources],
) -> None:
    _, resources = local_run
    ran = subprocess.run(
        [sys.executable, "-m", "resumable.local.events", resources.events_queue_url, "--type", "Turn Exploded"],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        cwd=ROOT,
        check=False,
    )
    assert ran.returncode == 2
    assert "no detail type 'Turn Exploded'" in ran.stderr and "nothing was read" in ran.stderr
