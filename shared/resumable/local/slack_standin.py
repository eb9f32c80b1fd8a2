"""Slack's Web API on loopback, as far as resumable calls it, the way the embedded AWS plays AWS:
``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``, ``views.open`` and ``users.info``,
answered as Slack answers them (``{"ok": true, ...}``, or ``{"ok": false, "error": ...}``: a
missing token is ``not_authed``, an unknown message ``message_not_found``). It keeps every channel's
messages as last posted or updated, what each person was told alone, and the modals opened, so a
test (or a person running ``make run``) sees what Slack would show. slack_sdk's ``WebClient`` reaches
it with ``base_url=stand_in.url``. Local only: it never ships in the layer.

It also plays the person at the Slack client: ``GET /local/messages`` shows the channels
(``?request=<requestId>``: that question's message), what each person was told alone and the modals
opened; ``POST /local/press`` (``{"request"`` or ``"ts", "button": "approve" | "deny" | "edit",
"user"}``, and ``"confirm": true`` for a button whose confirmation dialog Slack shows first) presses
a button of a question's message, and ``POST /local/submit`` (``{"user",
"text"}``) submits the modal last opened; each is sent to ``interactions_url`` as Slack sends it: a
form field ``payload``, signed with the signing secret by slack_sdk's own signer."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode

from slack_sdk.signature import SignatureVerifier

from resumable.slack.messages import APPROVE, DENY, DENY_MODAL, EDIT, INPUT_FIELD, MESSAGE_FIELD

BUTTONS = {"approve": APPROVE, "deny": DENY, "edit": EDIT}


@dataclass
class Posted:
    channel: str
    ts: str
    text: str | None
    blocks: list[dict[str, Any]]
    updates: int = 0
    request_id: str | None = None  # (the question its buttons answered, as first posted)


@dataclass
class SlackStandIn:
    """What Slack holds: ``messages`` by (channel, ts), ``ephemeral`` (user, text) in order, ``views``
    opened, every ``calls`` (method, arguments); ``users``: user id -> the user as ``users.info``
    gives it (``team_id``, ``is_email_confirmed``, ``profile.email``, ...)."""

    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    token: str = "xoxb-stand-in"
    signing_secret: str = "stand-in-signing-secret"
    interactions_url: str | None = None  # (where a press or a submission is sent: the API's /slack/interactions)
    messages: dict[tuple[str, str], Posted] = field(default_factory=dict)
    ephemeral: list[tuple[str, str]] = field(default_factory=list)
    views: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _clock: int = 1_700_000_000

    def in_channel(self, channel: str) -> list[Posted]:
        with self._lock:
            return [m for (c, _), m in sorted(self.messages.items()) if c == channel]

    def press(self, message: str, button: str, user: str, confirmed: bool = False) -> dict[str, Any]:
        """The ``block_actions`` payload of ``user`` pressing ``button`` on the message ``message``
        (its ``ts``, or the request id of the question it asks). A button that carries a confirmation
        dialog sends nothing until it is ``confirmed``, as Slack's client shows the dialog first."""
        found = [m for (_, t), m in self.messages.items() if message in (t, m.request_id)]
        if not found:
            raise LookupError(f"no message {message!r}: GET /local/messages lists them")
        ts = found[0].ts
        action_id = BUTTONS.get(button, "")
        pressed = [
            e
            for b in found[0].blocks
            for e in b.get("elements", [])
            if e.get("type") == "button" and e.get("action_id") == action_id
        ]
        if not pressed:
            raise LookupError(f"the message {ts!r} has no {button!r} button (settled already?)")
        dialog = pressed[0].get("confirm")
        if dialog and not confirmed:
            asks = f"{dialog['title']['text']} {dialog['text']['text']}"
            raise LookupError(f'the {button!r} button asks first: "{asks}"; press it again with "confirm": true')
        return button_payload(action_id, pressed[0]["value"], self._person(user), found[0].channel, ts)

    def submit(self, user: str, text: str | None) -> dict[str, Any]:
        """The ``view_submission`` payload of ``user`` submitting the modal last opened with ``text``."""
        if not self.views:
            raise LookupError("no modal is open: press deny or edit first")
        return submission_payload(self.views[-1], text, self._person(user))

    def _person(self, user: str) -> dict[str, str]:
        known = self.users.get(user, {})
        return {"id": user, "username": known.get("name", user.lower()), "team_id": known.get("team_id", "T0LOCAL")}

    def send(self, payload: dict[str, Any]) -> tuple[int, str]:
        """Send ``payload`` to ``interactions_url`` as Slack does: the API's status and body."""
        if not self.interactions_url:
            raise LookupError("the stand-in was given no interactions_url to send clicks to")
        body, headers = signed(payload, self.signing_secret)
        request = urllib.request.Request(
            self.interactions_url,
            body.encode(),
            {**headers, "Content-Type": "application/x-www-form-urlencoded"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def shown(self, request_id: str | None = None) -> dict[str, Any]:
        """What Slack would show: each channel's messages (text, and the buttons still on them; only
        the question ``request_id``'s, if given), what each person was told alone, and the modals opened."""
        with self._lock:
            return {
                "messages": [
                    {
                        "channel": m.channel,
                        "ts": m.ts,
                        "requestId": m.request_id,
                        "text": m.text,
                        "buttons": [
                            name
                            for b in m.blocks
                            for e in b.get("elements", [])
                            for name, action in BUTTONS.items()
                            if e.get("action_id") == action
                        ],
                        "updates": m.updates,
                    }
                    for m in self.messages.values()
                    if request_id in (None, m.request_id)
                ],
                "toldAlone": [{"user": u, "text": t} for u, t in self.ephemeral],
                "modals": [v.get("title", {}).get("text") for v in self.views],
            }

    def call(self, method: str, arguments: dict[str, Any], authorization: str | None) -> dict[str, Any]:
        with self._lock:
            self.calls.append((method, arguments))
            if authorization != f"Bearer {self.token}":
                return {"ok": False, "error": "not_authed" if not authorization else "invalid_auth"}
            answer = getattr(self, "_" + method.replace(".", "_"), None)
            return answer(arguments) if answer else {"ok": False, "error": "unknown_method"}

    def _chat_postMessage(self, arguments: dict[str, Any]) -> dict[str, Any]:  # noqa: N802 (Slack's name)
        channel = arguments.get("channel")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        self._clock += 1
        ts = f"{self._clock}.000100"
        blocks = _blocks(arguments)
        self.messages[(channel, ts)] = Posted(
            channel, ts, arguments.get("text"), blocks, request_id=_request_of(blocks)
        )
        return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts, "text": arguments.get("text")}}

    def _chat_update(self, arguments: dict[str, Any]) -> dict[str, Any]:
        posted = self.messages.get((arguments.get("channel", ""), arguments.get("ts", "")))
        if posted is None:
            return {"ok": False, "error": "message_not_found"}
        posted.text, posted.blocks, posted.updates = arguments.get("text"), _blocks(arguments), posted.updates + 1
        return {"ok": True, "channel": posted.channel, "ts": posted.ts, "text": posted.text}

    def _chat_postEphemeral(self, arguments: dict[str, Any]) -> dict[str, Any]:  # noqa: N802 (Slack's name)
        if not arguments.get("channel") or not arguments.get("user"):
            return {"ok": False, "error": "invalid_arguments"}
        self.ephemeral.append((arguments["user"], arguments.get("text") or ""))
        return {"ok": True, "message_ts": f"{self._clock}.000200"}

    def _views_open(self, arguments: dict[str, Any]) -> dict[str, Any]:
        view = arguments.get("view")
        if not arguments.get("trigger_id") or view is None:
            return {"ok": False, "error": "invalid_arguments"}
        view = json.loads(view) if isinstance(view, str) else view
        self.views.append(view)
        return {"ok": True, "view": {"id": f"V{len(self.views):08d}", **view}}

    def _users_info(self, arguments: dict[str, Any]) -> dict[str, Any]:
        user = arguments.get("user", "")
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": {"id": user, **self.users[user]}}


def signed(payload: dict[str, Any], secret: str, at: float | None = None) -> tuple[str, dict[str, str]]:
    """``payload`` as Slack sends it (a form field), with the headers it signs it with."""
    return signed_body(urlencode({"payload": json.dumps(payload)}), secret, at)


def signed_body(body: str, secret: str, at: float | None = None) -> tuple[str, dict[str, str]]:
    """``body`` as sent, with the headers Slack signs it with (v0 HMAC-SHA256 of ``v0:<timestamp>:<body>``)."""
    timestamp = str(int(time.time() if at is None else at))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return body, {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}


def button_payload(action_id: str, value: str, user: dict[str, str], channel: str, ts: str) -> dict[str, Any]:
    """A ``block_actions`` payload: ``user`` pressed the button ``action_id`` (whose value is ``value``)
    on the message ``ts`` of ``channel``."""
    return {
        "type": "block_actions",
        "user": user,
        "team": {"id": user["team_id"]},
        "trigger_id": "1337.42.abcd",
        "container": {"type": "message", "channel_id": channel, "message_ts": ts},
        "actions": [{"type": "button", "action_id": action_id, "value": value, "block_id": "answer"}],
        "response_url": f"https://hooks.slack.com/actions/{user['team_id']}/1/xyz",
    }


def submission_payload(view: dict[str, Any], typed: str | None, user: dict[str, str]) -> dict[str, Any]:
    """A ``view_submission`` payload: ``user`` submitted ``view`` (a modal as opened) with ``typed`` in its field."""
    field = MESSAGE_FIELD if view["callback_id"] == DENY_MODAL else INPUT_FIELD
    return {
        "type": "view_submission",
        "user": user,
        "team": {"id": user["team_id"]},
        "view": {
            "callback_id": view["callback_id"],
            "private_metadata": view.get("private_metadata", ""),
            "state": {"values": {field: {field: {"type": "plain_text_input", "value": typed}}}},
        },
    }


def _request_of(blocks: list[dict[str, Any]]) -> str | None:
    """The question a message's buttons answer (their value: resumable's ``Asked``), if any."""
    for element in (e for b in blocks for e in b.get("elements", []) if e.get("type") == "button"):
        try:
            return str(json.loads(element["value"])["request_id"])
        except (KeyError, ValueError, TypeError):
            continue
    return None


def _blocks(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = arguments.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


@contextmanager
def slack_stand_in(
    users: dict[str, dict[str, Any]] | None = None, port: int = 0, **options: Any
) -> Iterator[SlackStandIn]:
    """A stand-in serving on 127.0.0.1 (``port``, or a free one) until the block ends; ``options``
    are the stand-in's (``signing_secret``, ``interactions_url``)."""
    stand_in = SlackStandIn(users=dict(users or {}), **options)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path, _, query = self.path.partition("?")
            if path != "/local/messages":
                self._reply(404, {"ok": False, "error": "GET /local/messages is all the stand-in shows"})
                return
            self._reply(200, stand_in.shown(parse_qs(query).get("request", [None])[0]))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode()
            path = self.path.split("?")[0]
            if path in ("/local/press", "/local/submit"):
                self._person(path, raw)
                return
            if (self.headers.get("Content-Type") or "").startswith("application/json"):
                try:
                    arguments = json.loads(raw or "{}")
                except ValueError:
                    self._reply(200, {"ok": False, "error": "invalid_json"})  # (as Slack answers it)
                    return
            else:
                arguments = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            method = path.rsplit("/", 1)[-1]
            self._reply(200, stand_in.call(method, arguments, self.headers.get("Authorization")))

        def _person(self, path: str, raw: str) -> None:
            try:
                asked = json.loads(raw or "{}")
                if not isinstance(asked, dict) or not isinstance(asked.get("user"), str):
                    raise ValueError('send a JSON object with "user" (a Slack user id, e.g. U0LOCAL)')
                if path == "/local/press":
                    message = asked.get("request") or asked.get("ts")
                    confirmed = asked.get("confirm") is True
                    payload = stand_in.press(str(message), str(asked.get("button")), asked["user"], confirmed)
                else:
                    payload = stand_in.submit(asked["user"], asked.get("text"))
                status, body = stand_in.send(payload)
            except (ValueError, LookupError) as error:
                self._reply(400, {"ok": False, "error": f"{error}; nothing was sent"})
                return
            # (what the person is told comes after: the click is answered once acknowledged)
            self._reply(200, {"ok": status == 200, "status": status, "body": body})

        def _reply(self, status: int, answer: dict[str, Any]) -> None:
            reply = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_: Any) -> None:  # (quiet: the calls are in stand_in.calls)
            return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}/api/"
    # (its shutdown is seen at the next poll: a short one ends each test's stand-in at once)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), name="slack-stand-in", daemon=True)
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
