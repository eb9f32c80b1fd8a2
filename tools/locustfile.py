"""The people ``make load`` simulates (Locust; tools/load.py runs it): each starts turns that ask for a
destructive step's approval, then approves, denies or cancels them; starts turns whose step two
people must approve and approves them as alice, then bob (locally); and reads the inbox and its
turns, with a few seconds' thought between. Every request is named by its route, so the statistics
are per route; a refusal is a failure named by its status and error code.

Runs in Locust's environment (.venv/load), which has no resumable: only Locust, and botocore to sign
requests to a deployed API (``RESUMABLE_LOAD_SIGN=1``). Each id it made is written, as JSON lines, to
``RESUMABLE_LOAD_MADE`` (what tools/load.py checks at the end).
"""

from __future__ import annotations

import json
import os
import random
import threading
import uuid
from typing import Any

from locust import HttpUser, between, task

_MADE = threading.Lock()


def _made(kind: str, **ids: str) -> None:
    with _MADE, open(os.environ["RESUMABLE_LOAD_MADE"], "a") as made:
        made.write(json.dumps({"kind": kind, **ids}) + "\n")


class _SigV4:
    """requests' auth that signs a request to an IAM-authorized HTTP API (the standard credential chain)."""

    def __init__(self, region: str) -> None:
        import botocore.session

        self.credentials = botocore.session.get_session().get_credentials()
        if self.credentials is None:
            raise SystemExit("make load --url: no AWS credentials to sign with (AWS_PROFILE or AWS_ACCESS_KEY_ID)")
        self.region = region

    def __call__(self, request: Any) -> Any:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        signed = AWSRequest(method=request.method, url=request.url, data=request.body, headers=dict(request.headers))
        SigV4Auth(self.credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(signed)
        request.headers.update(dict(signed.headers))
        return request


class Person(HttpUser):
    """Someone who asks agents for risky steps and answers their questions."""

    wait_time = between(1, 3)

    def on_start(self) -> None:
        self.open: list[tuple[str, str, str]] = []  # (session, turn, request) waiting for this person
        self.two: list[tuple[str, str, str, int]] = []  # the same, of two-person questions, and approvals given
        if os.environ.get("RESUMABLE_LOAD_SIGN") == "1":
            self.client.auth = _SigV4(os.environ.get("AWS_REGION") or "us-east-1")

    def _call(self, method: str, path: str, name: str, body: Any = None) -> Any:
        with self.client.request(method, path, json=body, name=name, catch_response=True) as reply:
            if reply.status_code >= 400:
                try:
                    code = reply.json().get("code") or reply.json().get("message")
                except ValueError:
                    code = "not json"
                reply.failure(f"{reply.status_code} {code}")
                return None
            return reply.json()

    @task(4)
    def ask(self) -> None:
        session = f"load-{uuid.uuid4().hex[:12]}"
        turn = self._call(
            "POST",
            f"/sessions/{session}/turns",
            "POST /sessions/{id}/turns",
            {"prompt": f"delete rec-{random.randrange(10**6)}"},
        )
        if turn and turn.get("status") == "waiting" and turn.get("interactions"):
            request = turn["interactions"][0]["requestId"]
            self.open.append((session, turn["turnId"], request))
            _made("asked", session=session, turn=turn["turnId"], request=request)

    @task(1)
    def ask_two(self) -> None:
        """A step two people must approve (the load test's approval rule; on the local stack only,
        where a request may name its principal)."""
        if os.environ.get("RESUMABLE_LOAD_SIGN") == "1":
            return
        session = f"load2-{uuid.uuid4().hex[:12]}"
        body = {"prompt": f"drop tbl-{random.randrange(10**6)}"}
        turn = self._call("POST", f"/sessions/{session}/turns", "POST /sessions/{id}/turns", body)
        if turn and turn.get("status") == "waiting" and turn.get("interactions"):
            request = turn["interactions"][0]["requestId"]
            self.two.append((session, turn["turnId"], request, 0))
            _made("asked", session=session, turn=turn["turnId"], request=request)

    @task(2)
    def approve_as_one_of_two(self) -> None:
        if not self.two:
            return
        session, turn, request, given = self.two.pop(random.randrange(len(self.two)))
        who = ("alice", "bob")[given]
        with self.client.post(
            f"/sessions/{session}/turns/{turn}/interactions/{request}",
            json={"response": {"decision": "approve"}},
            headers={"x-resumable-principal": f"arn:aws:iam::000000000000:user/{who}"},
            name="POST /sessions/{id}/turns/{id}/interactions/{id}",
            catch_response=True,
        ) as reply:
            if reply.status_code >= 400:
                reply.failure(f"{reply.status_code} {reply.text[:80]}")
                return
        if given == 0:
            self.two.append((session, turn, request, 1))
        else:
            _made("approve", session=session, turn=turn, request=request)

    def _answer(self, decision: dict[str, Any]) -> None:
        if not self.open:
            return
        session, turn, request = self.open.pop(random.randrange(len(self.open)))
        answered = self._call(
            "POST",
            f"/sessions/{session}/turns/{turn}/interactions/{request}",
            "POST /sessions/{id}/turns/{id}/interactions/{id}",
            {"response": decision},
        )
        if answered is not None:
            _made(decision["decision"], session=session, turn=turn, request=request)

    @task(3)
    def approve(self) -> None:
        self._answer({"decision": "approve"})

    @task(1)
    def deny(self) -> None:
        self._answer({"decision": "deny", "message": "not this one"})

    @task(1)
    def cancel_turn(self) -> None:
        if not self.open:
            return
        session, turn, request = self.open.pop(random.randrange(len(self.open)))
        canceled = self._call(
            "POST", f"/sessions/{session}/turns/{turn}/cancel", "POST /sessions/{id}/turns/{id}/cancel"
        )
        if canceled is not None:
            _made("canceled", session=session, turn=turn, request=request)

    @task(2)
    def read_inbox(self) -> None:
        self._call("GET", "/interactions?status=requested&limit=50", "GET /interactions")

    @task(1)
    def read_turn(self) -> None:
        if self.open:
            session, turn, _ = random.choice(self.open)
            self._call("GET", f"/sessions/{session}/turns/{turn}", "GET /sessions/{id}/turns/{id}")
