"""Sign-in for people (AuthMode JWT) in a real headless Chromium: the inbox page signs in with the
authorization-code flow with PKCE against the local issuer, sends the token as a bearer token, and
says so when the API answers 401 (an expired token, one for another audience); a non-approver sees
only their own sessions; the local API checks tokens as API Gateway's JWT authorizer does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from resumable.config import Settings
from resumable.local.issuer import GROUPS_CLAIM, LocalIssuer
from tests.e2e.browser import WAIT_MS, approve_on, screenshot
from tests.e2e.local_api import call as local_call
from tests.e2e.local_api import jwt_api
from tests.patience import HANG_SECONDS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def jwt_url(handler_environment: Settings, issuer: LocalIssuer) -> Iterator[str]:
    """The local API in JWT mode: the page is told where to sign in, and the group approvers approve."""
    with jwt_api(issuer) as url:
        yield url


def call(url: str, method: str, path: str, token: str | None, body: Any = None) -> tuple[int, Any]:
    return local_call(url, method, path, body, token=token)


def sign_in(browser: Any, url: str, user: str, fragment: str = "") -> Any:
    """A new browser (no cookies, no token) that opens the inbox (at ``fragment``, a link to one
    question) and signs in as ``user``."""
    page = browser.new_context().new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{url}/inbox?refresh=0{fragment}")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name=user, exact=False).first.click()  # the issuer's sign-in page
    page.wait_for_url(f"{url}/inbox?refresh=0{fragment}")  # back, the URL cleaned of the code
    page.wait_for_function("() => Number(document.body.dataset.refreshes || 0) >= 1")  # token in hand, API asked
    return page


def card(page: Any, session: str) -> Any:
    return page.locator("li.card", has=page.locator("dd.session", has_text=session))


def test_the_api_checks_tokens_as_api_gateway_does(jwt_url: str, issuer: LocalIssuer) -> None:
    assert call(jwt_url, "GET", "/interactions", None) == (401, {"message": "Unauthorized"})
    assert call(jwt_url, "GET", "/interactions", "not-a-jwt")[0] == 401
    assert call(jwt_url, "GET", "/interactions", issuer.mint("bob", audience="another-app"))[0] == 401
    assert call(jwt_url, "GET", "/interactions", issuer.mint("bob", lifetime_seconds=-60))[0] == 401
    forged = LocalIssuer().start()  # the same claims, signed by a key the issuer does not publish
    try:
        assert call(jwt_url, "GET", "/interactions", _reissued(forged, issuer))[0] == 401
    finally:
        forged.stop()
    assert call(jwt_url, "GET", "/interactions", issuer.mint("bob"))[0] == 200
    # The page itself needs no token (it holds no data).
    with urllib.request.urlopen(f"{jwt_url}/inbox", timeout=HANG_SECONDS) as reply:
        assert reply.status == 200 and b'"authMode": "JWT"' in reply.read()


def _reissued(forger: LocalIssuer, issuer: LocalIssuer) -> str:
    """A token naming ``issuer`` as its issuer, signed with ``forger``'s key."""
    import jwt

    claims = jwt.decode(issuer.mint("alice"), options={"verify_signature": False})
    return jwt.encode(claims, forger._key, algorithm="RS256", headers={"kid": issuer._kid})


def test_the_token_endpoint_insists_on_pkce(issuer: LocalIssuer) -> None:
    query = {
        "response_type": "code",
        "client_id": issuer.client_id,
        "redirect_uri": "http://127.0.0.1:1/inbox",
        "state": "s",
        "code_challenge": "x" * 43,
        "code_challenge_method": "S256",
    }
    code = issuer.authorize(query, "alice").split("code=")[1].split("&")[0]
    form = {"grant_type": "authorization_code", "code": code, "client_id": issuer.client_id}
    form |= {"redirect_uri": query["redirect_uri"], "code_verifier": "the wrong verifier"}
    request = urllib.request.Request(f"{issuer.url}/token", data=urlencode(form).encode(), method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=HANG_SECONDS)
    assert json.loads(refused.value.read())["error"] == "invalid_grant"
    with pytest.raises(ValueError, match="PKCE is required"):
        issuer.authorize(query | {"code_challenge_method": "plain"}, "alice")


def test_people_sign_in_and_see_what_is_theirs_to_answer(jwt_url: str, issuer: LocalIssuer, browser: Any) -> None:
    asked = {}
    for user, record in (("bob", "test-db"), ("carol", "dev-db")):
        status, turn = call(
            jwt_url, "POST", f"/sessions/jwt-{user}/turns", issuer.mint(user), {"prompt": f"delete the {record} record"}
        )
        assert (status, turn["status"]) == (201, "waiting"), turn
        asked[user] = turn["interactions"][0]["requestId"]

    bob = sign_in(browser, jwt_url, "bob")
    expect(bob.locator("#who-name")).to_have_text("signed in as bob@example.local")
    expect(card(bob, "jwt-bob")).to_have_count(1)
    expect(bob.locator("li.card")).to_have_count(1)  # carol's session is not bob's to see
    assert "code=" not in bob.url

    # An approver follows the e-mail's link to carol's question: signed in, she lands on it, focused.
    alice = sign_in(browser, jwt_url, "alice", f"#q-{asked['carol']}")  # an approver: every session's questions
    expect(card(alice, "jwt-carol").locator("article")).to_be_focused()
    expect(card(alice, "jwt-carol").locator(".for")).to_contain_text("carol")
    expect(card(alice, "jwt-bob")).to_have_count(1)
    expect(card(alice, "jwt-carol")).to_have_count(1)
    screenshot(alice, "inbox-signed-in")
    approve_on(card(alice, "jwt-carol"))
    expect(alice.locator("#outcomes li").first).to_contain_text("the turn is completed: record dev-db deleted")
    status, turn = call(jwt_url, "GET", "/sessions/jwt-carol/interactions", issuer.mint("carol"))
    assert status == 200 and turn["interactions"][0]["answeredBy"] == "alice"


@pytest.mark.parametrize("shape", ["expired", "another audience"])
def test_a_token_the_api_refuses_asks_the_person_to_sign_in_again(
    jwt_url: str, issuer: LocalIssuer, browser: Any, shape: str
) -> None:
    if shape == "expired":
        issuer.lifetime_seconds = -60
    else:
        issuer.token_audience = "another-app"
    try:
        page = sign_in(browser, jwt_url, "alice")
    finally:
        issuer.lifetime_seconds, issuer.token_audience = 3600, None
    notice = page.locator("#notice")
    expect(notice).to_contain_text("Your sign-in has expired or is not accepted by this API (401")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.locator("li.card")).to_have_count(0)


def test_with_jwt_the_caller_is_the_token_subject_and_nobody_stands_in_for_a_missing_token(
    jwt_url: str, issuer: LocalIssuer
) -> None:
    """What API Gateway hands the function: the claims as strings (an array claim in brackets)."""
    from resumable.local.functions import ROOT
    from tools.invoke import invoke

    event = json.loads((ROOT / "events" / "start_turn.json").read_text())
    event["pathParameters"] = {"sessionId": "jwt-claims"}
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/sessions/jwt-claims/turns"
    event["body"] = json.dumps({"prompt": "delete the staging-db record"})
    event["requestContext"]["authorizer"] = {
        "jwt": {"claims": {"sub": "dave", GROUPS_CLAIM: "[approvers admins]"}, "scopes": None}  # flattened
    }
    started = invoke("StartTurnFunction", event)
    assert started["statusCode"] == 201, started
    turn = json.loads(started["body"])
    # The session is dave's (the token's sub): bob may not see it.
    assert call(jwt_url, "GET", f"/sessions/jwt-claims/turns/{turn['turnId']}", issuer.mint("bob"))[0] == 404
    del event["requestContext"]["authorizer"]
    refused = invoke("StartTurnFunction", event | {"pathParameters": {"sessionId": "jwt-nobody"}})
    assert refused["statusCode"] == 400 and "no sign-in token's claims" in refused["body"]
