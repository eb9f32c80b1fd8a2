"""The inbox page's Content-Security-Policy lets it talk to the API that served it and, when people sign
in, to their issuer (and a Cognito pool's hosted domain): nowhere else, so a script that got in could
not send what it read to a server of its own."""

from __future__ import annotations

from resumable.config import Settings
from resumable.web import connect_sources, content_security_policy


def _connect(policy: str) -> str:
    [directive] = [d.strip() for d in policy.split(";") if d.strip().startswith("connect-src")]
    return directive


def test_signed_requests_only_reach_the_api_that_served_the_page() -> None:
    assert _connect(content_security_policy(Settings())) == "connect-src 'self'"


def test_signing_in_adds_the_issuer_and_a_cognito_pools_hosted_domain_only() -> None:
    cognito = Settings(auth_mode="JWT", jwt_issuer="https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC")
    assert connect_sources(cognito) == (
        "'self' https://cognito-idp.eu-west-1.amazonaws.com https://*.auth.eu-west-1.amazoncognito.com"
    )
    other = Settings(auth_mode="JWT", jwt_issuer="https://login.example.com/tenant/v2.0")
    assert _connect(content_security_policy(other)) == "connect-src 'self' https://login.example.com"
    assert "*" not in connect_sources(other)
