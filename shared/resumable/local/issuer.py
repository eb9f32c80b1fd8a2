"""A small OpenID Connect issuer on 127.0.0.1 for ``make run AUTH=jwt``: a discovery document, a JWKS,
and authorize and token endpoints (the authorization-code flow with PKCE, S256 only) that sign RS256
tokens for named local users, so the inbox page's real sign-in runs with no account anywhere.

Local only: it never ships in the layer. Its users need no password (choosing one is signing in).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

CLIENT_ID = "resumable-inbox"
GROUPS_CLAIM = "cognito:groups"
# The named local users and their groups: alice and dave approve (two, for a rule that needs two);
# bob and carol see only their own sessions.
USERS: dict[str, tuple[str, ...]] = {"alice": ("approvers",), "dave": ("approvers",), "bob": (), "carol": ()}
_CODE_SECONDS = 120


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class _Code:
    user: str
    client_id: str
    redirect_uri: str
    challenge: str
    nonce: str | None
    expires: float


@dataclass
class LocalIssuer:
    """The issuer; ``start()`` serves it, ``url`` is its issuer URL. ``lifetime_seconds`` and
    ``token_audience`` shape the next tokens it signs (tests sign in with an expired token, or one for
    another audience, through the real flow)."""

    port: int = 0
    client_id: str = CLIENT_ID
    users: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(USERS))
    lifetime_seconds: int = 3600
    token_audience: str | None = None
    _codes: dict[str, _Code] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    def __post_init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa

        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._kid = secrets.token_hex(8)

    # ---- serving ----

    def start(self) -> LocalIssuer:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._server.daemon_threads = True
        # (its shutdown is seen at the next poll: a short one ends it at once)
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the local issuer is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks.json",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "scopes_supported": ["openid"],
            "token_endpoint_auth_methods_supported": ["none"],
        }

    def jwks(self) -> dict[str, Any]:
        numbers = self._key.public_key().public_numbers()

        def whole(value: int) -> str:
            return _b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

        return {
            "keys": [
                {
                    "kty": "RSA",
                    "use": "sig",
                    "alg": "RS256",
                    "kid": self._kid,
                    "n": whole(numbers.n),
                    "e": whole(numbers.e),
                }
            ]
        }

    # ---- tokens ----

    def mint(
        self,
        user: str,
        audience: str | None = None,
        lifetime_seconds: int | None = None,
        extra: dict[str, str] | None = None,
    ) -> str:
        """A token for ``user`` as the token endpoint would sign it (tests call the API with it)."""
        import jwt

        now = int(time.time())
        lifetime = self.lifetime_seconds if lifetime_seconds is None else lifetime_seconds
        audience = audience or self.token_audience or self.client_id
        claims = {
            "iss": self.url,
            "sub": user,
            "aud": audience,
            "client_id": audience,
            "iat": now if lifetime > 0 else now + lifetime - 60,
            "exp": now + lifetime,
            "username": user,
            "email": f"{user}@example.local",
            "scope": "openid",
            GROUPS_CLAIM: list(self.users.get(user, ())),
            **(extra or {}),
        }
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": self._kid})

    def authorize(self, query: dict[str, str], user: str) -> str:
        """The redirect that answers an authorization request with a code (``ValueError`` saying what
        is wrong with the request instead)."""
        problem = self.request_problem(query)
        if problem:
            raise ValueError(problem)
        if user not in self.users:
            raise ValueError(f"there is no local user {user!r}; the local users are {sorted(self.users)}")
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = _Code(
                user,
                query["client_id"],
                query["redirect_uri"],
                query["code_challenge"],
                query.get("nonce"),
                time.time() + _CODE_SECONDS,
            )
        answer = {"code": code} | ({"state": query["state"]} if "state" in query else {})
        return query["redirect_uri"] + ("&" if "?" in query["redirect_uri"] else "?") + urlencode(answer)

    def request_problem(self, query: dict[str, str]) -> str | None:
        """What is wrong with an authorization request, or None."""
        if query.get("response_type") != "code":
            return "response_type must be 'code' (the authorization-code flow)"
        if query.get("client_id") != self.client_id:
            return f"unknown client_id {query.get('client_id')!r}: this issuer knows {self.client_id!r}"
        redirect = urlsplit(query.get("redirect_uri", ""))
        if redirect.scheme != "http" or redirect.hostname not in ("127.0.0.1", "localhost"):
            return "redirect_uri must be an http://127.0.0.1 or http://localhost address (a local issuer)"
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return "PKCE is required: send code_challenge with code_challenge_method=S256"
        return None

    def exchange(self, form: dict[str, str]) -> dict[str, Any]:
        """The token endpoint's answer to ``form`` (``ValueError`` with an OAuth error code otherwise)."""
        if form.get("grant_type") != "authorization_code":
            raise ValueError("unsupported_grant_type: only authorization_code")
        with self._lock:
            code = self._codes.pop(form.get("code", ""), None)  # a code is good once
        if code is None or code.expires < time.time():
            raise ValueError("invalid_grant: the code is unknown, used or expired")
        if form.get("client_id") != code.client_id or form.get("redirect_uri") != code.redirect_uri:
            raise ValueError("invalid_grant: client_id or redirect_uri differ from the authorization request's")
        verifier = form.get("code_verifier", "")
        if _b64url(hashlib.sha256(verifier.encode()).digest()) != code.challenge:
            raise ValueError("invalid_grant: the code_verifier does not match the code_challenge (PKCE)")
        token = self.mint(code.user)
        nonce: dict[str, str] = {"nonce": code.nonce} if code.nonce else {}
        identity = self.mint(code.user, extra=nonce)
        return {
            "access_token": token,
            "id_token": identity,
            "token_type": "Bearer",
            "expires_in": self.lifetime_seconds,
        }

    def sign_in_page(self, query: dict[str, str]) -> str:
        hidden = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in query.items()
        )
        buttons = "".join(
            f'<button type="submit" name="user" value="{html.escape(u)}">{html.escape(u)}'
            f"{' (' + ', '.join(g) + ')' if g else ''}</button>"
            for u, g in self.users.items()
        )
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            'content="width=device-width, initial-scale=1"><title>Sign in (local issuer)</title></head><body '
            'style="font-family: system-ui, sans-serif; max-width: 30rem; margin: 3rem auto; padding: 0 1rem">'
            "<h1>Sign in</h1><p>The local issuer of <code>make run AUTH=jwt</code>. Choose who you are:</p>"
            f'<form method="post" action="/authorize" style="display: grid; gap: .5rem">{hidden}{buttons}</form>'
            "</body></html>"
        )


def _handler(issuer: LocalIssuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(
            self, status: int, body: str, content_type: str, headers: dict[str, str] | None = None, cors: bool = True
        ) -> None:
            raw = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(raw)))
            self.send_header("Cache-Control", "no-store")
            if cors:  # the inbox page reads discovery, keys and tokens from another origin
                self.send_header("Access-Control-Allow-Origin", "*")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def _json(self, status: int, body: Any) -> None:
            self._send(status, json.dumps(body), "application/json")

        def _form(self) -> dict[str, str]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(min(length, 64 * 1024)).decode("utf-8", errors="replace")
            return {k: v[0] for k, v in parse_qs(raw).items()}

        def do_OPTIONS(self) -> None:
            self._send(
                204,
                "",
                "text/plain",
                {"Access-Control-Allow-Methods": "GET, POST", "Access-Control-Allow-Headers": "content-type"},
            )

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/.well-known/openid-configuration":
                self._json(200, issuer.discovery())
            elif url.path == "/jwks.json":
                self._json(200, issuer.jwks())
            elif url.path == "/local/token":
                # A token without the browser, for curl and the resumable command (a local convenience).
                user = parse_qs(url.query).get("user", [""])[0]
                if user not in issuer.users:
                    self._json(400, {"error": "invalid_request", "error_description": f"users: {sorted(issuer.users)}"})
                else:
                    # No CORS: no web page a developer visits may read a token for curl.
                    self._send(200, issuer.mint(user), "text/plain", cors=False)
            elif url.path == "/authorize":
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                problem = issuer.request_problem(query)
                if problem:
                    self._send(400, f"<p>Cannot sign in: {html.escape(problem)}</p>", "text/html; charset=utf-8")
                else:
                    self._send(200, issuer.sign_in_page(query), "text/html; charset=utf-8")
            else:
                self._json(404, {"error": "not_found", "error_description": f"no {url.path} here"})

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            form = self._form()
            if url.path == "/authorize":
                user = form.pop("user", "")
                try:
                    target = issuer.authorize(form, user)
                except ValueError as error:
                    self._send(400, f"<p>Cannot sign in: {html.escape(str(error))}</p>", "text/html; charset=utf-8")
                    return
                self._send(302, "", "text/plain", {"Location": target})
            elif url.path == "/token":
                try:
                    self._json(200, issuer.exchange(form))
                except ValueError as error:
                    code, _, description = str(error).partition(": ")
                    self._json(400, {"error": code, "error_description": description})
            else:
                self._json(404, {"error": "not_found", "error_description": f"no {url.path} here"})

    return Handler
