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


@functools.cache
def content_security_policy() -> str:
    """The page's Content-Security-Policy: only its own inlined script and style run (by their hashes);
    it talks to the API and, in JWT mode, the issuer."""
    _, css, js = _parts()

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    return (
        f"default-src 'none'; script-src {digest(js)}; style-src {digest(css)}; connect-src *; "
        "img-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    )
