"""The inbox page (``GET /inbox``): one HTML document with its CSS and JavaScript inlined, shipped in
the package, so it needs no build step, no CDN and no internet. It holds no data: every call it makes
is authorized like any other."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from importlib.resources import files
from urllib.parse import urlsplit

from resumable.config import Settings

SCRIPTS = ("audit.js", "signin.js", "inbox.js")
"""The page's script, in this order: one ``<script>``, so each file sees the functions of the others."""


@functools.cache
def _parts() -> tuple[str, str, str]:
    folder = files(__package__)
    html, css = ((folder / name).read_text(encoding="utf-8") for name in ("inbox.html", "inbox.css"))
    script = "\n".join((folder / name).read_text(encoding="utf-8") for name in SCRIPTS)
    return html, css, script


def page_config(settings: Settings) -> dict[str, object]:
    """What the page needs to know of the deployment: how people are authorized, and where they sign in."""
    return {
        "authMode": settings.auth_mode,
        "issuer": settings.jwt_issuer,
        "clientId": settings.jwt_audience[0] if settings.jwt_audience else None,
        "scope": "openid",
        "maxResponseBytes": settings.max_response_bytes,
    }


def inbox_page(settings: Settings) -> str:
    """The page, configured for ``settings``."""
    html, css, js = _parts()
    # Inside <script>, "</" would end the element: JSON allows "<\/" for it.
    config = json.dumps(page_config(settings)).replace("</", "<\\/")
    parts = {"CSS": css, "CONFIG": config, "JS": js}
    # One pass: a value (an issuer URL, say) that spells a placeholder is never expanded itself.
    return re.sub(r"/\*@(CSS|CONFIG|JS)\*/", lambda found: parts[found.group(1)], html)


_COGNITO = re.compile(r"^https://cognito-idp\.([a-z0-9-]+)\.amazonaws\.com(?:/|$)")


def connect_sources(settings: Settings) -> str:
    """Where the page may send requests: the API that served it, and in JWT mode the issuer, whose
    discovery document it reads, and its token endpoint (a Cognito user pool's is its hosted domain, on
    amazoncognito.com in the pool's Region; another issuer's is its own origin)."""
    sources = ["'self'"]
    if settings.auth_mode == "JWT" and settings.jwt_issuer:
        parsed = urlsplit(settings.jwt_issuer)
        sources.append(f"{parsed.scheme}://{parsed.netloc}")
        cognito = _COGNITO.match(settings.jwt_issuer)
        if cognito:
            sources.append(f"https://*.auth.{cognito.group(1)}.amazoncognito.com")
    return " ".join(sources)


def content_security_policy(settings: Settings) -> str:
    """The page's Content-Security-Policy: only its own inlined script and style run (by their hashes);
    it talks to the API and, in JWT mode, the issuer (``connect_sources``)."""
    return _policy(connect_sources(settings))


@functools.cache
def _policy(connect: str) -> str:
    _, css, js = _parts()

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    return (
        f"default-src 'none'; script-src {digest(js)}; style-src {digest(css)}; connect-src {connect}; "
        "img-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    )
