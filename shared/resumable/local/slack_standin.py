"""Slack's Web API on loopback, as far as resumable calls it, the way the embedded AWS plays AWS:
``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``, ``views.open`` and ``users.info``,
answered as Slack answers them (``{"ok": true, ...}``, or ``{"ok": false, "error": ...}``: a
missing token is ``not_authed``, an unknown message ``message_not_found``). It keeps every channel's
messages as last posted or updated, what each person was told alone, and the modals opened, so a
test (or a person running ``make run``) sees what Slack would show. slack_sdk's ``WebClient`` reaches
it with ``base_url=stand_in.url``. Local only: it never ships in the layer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


@dataclass
class Posted:
    channel: str
    ts: str
    text: str | None
    blocks: list[dict[str, Any]]
    updates: int = 0


@dataclass
class SlackStandIn:
    """What Slack holds: ``messages`` by (channel, ts), ``ephemeral`` (user, text) in order, ``views``
    opened, every ``calls`` (method, arguments); ``users``: user id -> the user as ``users.info``
    gives it (``team_id``, ``is_email_confirmed``, ``profile.email``, ...)."""

    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    token: str = "xoxb-stand-in"
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
        self.messages[(channel, ts)] = Posted(channel, ts, arguments.get("text"), _blocks(arguments))
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


def _blocks(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = arguments.get("blocks") or []
    return json.loads(blocks) if isinstance(blocks, str) else list(blocks)


@contextmanager
def slack_stand_in(users: dict[str, dict[str, Any]] | None = None) -> Iterator[SlackStandIn]:
    """A stand-in serving on 127.0.0.1 (a free port) until the block ends."""
    stand_in = SlackStandIn(users=dict(users or {}))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode()
            if (self.headers.get("Content-Type") or "").startswith("application/json"):
                arguments = json.loads(raw or "{}")
            else:
                arguments = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
            method = self.path.split("?")[0].rsplit("/", 1)[-1]
            reply = json.dumps(stand_in.call(method, arguments, self.headers.get("Authorization"))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_: Any) -> None:  # (quiet: the calls are in stand_in.calls)
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}/api/"
    thread = threading.Thread(target=server.serve_forever, name="slack-stand-in", daemon=True)
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
