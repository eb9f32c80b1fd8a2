"""One-click decision links on the local run: the publisher puts a link in each approval's e-mail
(NotifyEmail's topic, never the bus), bound to the question and to the approver DECISION_LINKS_AS
names; opening it decides nothing; its form decides once, as that approver; a link used, of a
settled or expired question, changed, or of an approver links no longer answer as, is refused with
a page saying why. And in Chromium: the page shows the question, and its Approve decides."""

from __future__ import annotations

import base64
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from resumable.api.app import forget
from resumable.aws.keys import LinkKey
from resumable.config import Settings
from resumable.local.events import EventResources, publishing, read_mail
from resumable.local.template import functions_in_process
from resumable.service.answering import decision_links
from resumable.store.decision_links import DecisionLinkItems
from tests.e2e.local_api import call, settings
from tests.patience import HANG_SECONDS, eventually

ANN = "arn:aws:iam::000000000000:user/approver-ann"
APPROVE = {"decision": "approve", "confirm": "yes"}  # (the demo's delete_record is destructive: the box ticked)


@pytest.fixture(scope="module")
def links(handler_environment: Settings, url: str) -> Iterator[EventResources]:
    """Links on, with the functions invocable (the DecisionLinks function hands each run to SubmitApproval)."""
    with (
        settings(API_URL=url, DECISION_LINKS_AS=ANN),
        publishing(handler_environment) as (resources, _),
        functions_in_process() as lambdas,
    ):
        yield resources
        # A run handed on may still be at its tail (retiring snapshots) when its turn reads completed:
        # it ends within this module's environment, whose calls it makes.
        assert lambdas.wait(HANG_SECONDS), "a run handed to SubmitApproval did not end"


MAILED_LINK = re.compile(r"^Or decide without signing in \(its page decides, once\): (\S+)$", re.MULTILINE)
_MAILED: list[tuple[str, str]] = []  # (every e-mail read so far: the mailbox is read once)


def _ask(url: str, resources: EventResources, session: str) -> tuple[dict[str, Any], str]:
    """A question asked in ``session``, and the decision link its e-mail carries."""
    status, turn = call(url, "POST", f"/sessions/{session}/turns", {"prompt": f"delete the {session} record"})
    assert status == 201 and turn["status"] == "waiting", turn
    request_id = turn["interactions"][0]["requestId"]

    def link() -> str | None:
        _MAILED.extend(read_mail(resources.mail_queue_url, idle_seconds=0))
        mailed = [MAILED_LINK.search(text) for _, text in _MAILED if f"(request {request_id})" in text]
        return next((found.group(1) for found in mailed if found), None)

    return turn, eventually(link, f"the decision link of {request_id}")


def _issued(configured: Settings, ids: tuple[str, str, str], expires_at: float, event_id: str) -> str:
    """A link issued as the Publisher issues them (signed by the key, its issue recorded)."""
    token = decision_links.issue(
        configured, LinkKey(configured), DecisionLinkItems(configured), ids, expires_at, event_id
    )
    assert token is not None
    return token


def _page(method: str, link: str, form: dict[str, str] | None = None, raw: str | None = None) -> tuple[int, str]:
    data = urlencode(form).encode() if form is not None else raw.encode() if raw is not None else None
    request = urllib.request.Request(link, data=data, method=method)
    try:
        with urllib.request.urlopen(request) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _question(url: str, session: str, turn: dict[str, Any]) -> dict[str, Any]:
    read = call(url, "GET", f"/sessions/{session}/turns/{turn['turnId']}", principal=ANN)[1]
    return dict(read["interactions"][0])


def _settles(url: str, session: str, turn: dict[str, Any], status: str = "completed") -> None:
    """The turn becomes ``status``: SubmitApproval, handed the run, moves it on."""

    def settled() -> bool:
        return call(url, "GET", f"/sessions/{session}/turns/{turn['turnId']}", principal=ANN)[1]["status"] == status

    eventually(settled, f"turn {turn['turnId']} {status}")


def test_opening_a_link_shows_the_question_and_decides_nothing_its_form_decides_once(
    links: EventResources, url: str
) -> None:
    turn, link = _ask(url, links, "link-approve")
    for _ in range(2):  # (a mail scanner, then the person)
        status, page = _page("GET", link)
        assert status == 200 and "delete_record" in page and "link-approve" in page and 'method="post"' in page
    assert _question(url, "link-approve", turn)["status"] == "requested"
    assert 'type="checkbox" id="confirm" name="confirm" value="yes" required' in page
    status, page = _page("POST", link, {"decision": "approve"})  # (destructive: not without its box ticked)
    assert status == 400 and "approving this call needs its confirmation (it runs delete_record link-approve" in page
    assert _question(url, "link-approve", turn)["status"] == "requested", "nothing was recorded"
    status, page = _page("POST", link, APPROVE)
    assert status == 200 and "Your approval is recorded" in page and "the turn is going on" in page
    _settles(url, "link-approve", turn)
    question = _question(url, "link-approve", turn)
    assert (question["status"], question["answeredBy"]) == ("answered", ANN)
    status, page = _page("POST", link, {"decision": "deny"})
    assert status == 409 and "answered already" in page
    status, page = _page("GET", link)
    assert status == 200 and "Nothing to decide" in page and 'method="post"' not in page
    audit = call(url, "GET", "/audit?outcome=approved", principal=ANN)[1]["records"]
    [record] = [r for r in audit if r["sessionId"] == "link-approve"]
    assert record["authentication"]["method"] == "decision_link"


def test_a_deny_by_link_tells_the_agent_why(links: EventResources, url: str) -> None:
    turn, link = _ask(url, links, "link-deny")
    status, page = _page("POST", link, {"decision": "deny", "text": "not <today> " + "日" * 1900})
    assert status == 200 and "denial is recorded" in page
    said = "not <today> " + "日" * 1900  # (2,000 characters of the form's, 18,000 bytes sent)
    assert _question(url, "link-deny", turn)["response"] == {"decision": "deny", "message": said}
    _settles(url, "link-deny", turn)


def test_a_question_answered_in_words_is_answered_by_its_links_reply(links: EventResources, url: str) -> None:
    with settings(AGENT_FACTORY="tests.factories:asks_a_question", API_URL=url, DECISION_LINKS_AS=ANN):
        turn, link = _ask(url, links, "link-reply")
        status, page = _page("GET", link)
        assert status == 200 and "which region?" in page and 'value="reply"' in page and "Approve" not in page
        assert _page("POST", link, APPROVE)[0] == 400  # (it takes words)
        status, page = _page("POST", link, {"decision": "reply", "text": "eu-west-1"})
        assert status == 200 and "Your answer is recorded" in page and "the turn is going on" in page
        _settles(url, "link-reply", turn)
        assert _question(url, "link-reply", turn)["response"] == "eu-west-1"


def test_a_link_is_used_once_even_while_its_question_waits_for_a_second_approver(
    links: EventResources, url: str
) -> None:
    with settings(APPROVAL_RULES='[{"tools": ["delete_*"], "required": 2}]', API_URL=url, DECISION_LINKS_AS=ANN):
        turn, link = _ask(url, links, "link-twice")
        status, page = _page("POST", link, APPROVE)
        assert status == 200 and "has 1 of the 2 approvals it needs: it waits for 1 more" in page
        status, page = _page("POST", link, APPROVE)
        assert status == 409 and "used already" in page
        assert len(_question(url, "link-twice", turn)["approvals"]) == 1
        # Opened again, the page says the link's approval is in and what it waits for, with no form.
        status, page = _page("GET", link)
        assert status == 200 and "Approved: waiting for others" in page and 'method="post"' not in page
        assert f"{ANN} approved it at " in page and "it waits for 1 more" in page


def test_a_link_whose_vote_was_written_before_a_later_step_failed_stays_spent(
    links: EventResources, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a two-person rule the question stays open after the link's approval: were the link given
    back when a step after the vote failed, it could then deny what it approved."""
    from resumable.exceptions import AwsError
    from resumable.service.answering import answer as submit_approval

    with settings(APPROVAL_RULES='[{"tools": ["delete_*"], "required": 2}]', API_URL=url, DECISION_LINKS_AS=ANN):
        turn, link = _ask(url, links, "link-failed-after")
        load = submit_approval.load
        failures = iter([AwsError("reading the turn failed, after the vote was written")])

        def failing_once(*args: Any, **kwargs: Any) -> Any:
            for failure in failures:
                raise failure
            return load(*args, **kwargs)

        monkeypatch.setattr(submit_approval, "load", failing_once)
        assert _page("POST", link, APPROVE)[0] >= 500
        monkeypatch.setattr(submit_approval, "load", load)
        assert [v["by"] for v in _question(url, "link-failed-after", turn)["approvals"]] == [ANN]
        status, page = _page("POST", link, {"decision": "deny"})
        assert status == 409 and "used already" in page
        assert _question(url, "link-failed-after", turn)["status"] == "requested"


def test_a_changed_expired_or_foreign_link_or_a_bad_form_is_refused_and_decides_nothing(
    links: EventResources, url: str, handler_environment: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    turn, link = _ask(url, links, "link-refused")
    token = link.rsplit("/", 1)[1]
    payload, _, mac = token.partition(".")
    held = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    for changed in ({**held, "p": "arn:aws:iam::000000000000:user/approver-eve"}, {**held, "e": held["e"] + 86400}):
        forged = base64.urlsafe_b64encode(json.dumps(changed).encode()).decode().rstrip("=")
        status, page = _page("POST", f"{url}/decide/{forged}.{mac}", APPROVE)  # (the old MAC)
        assert status == 404 and "not a decision link this deployment made" in page
    assert _page("POST", link, {"decision": "maybe"})[0] == 400
    assert _page("POST", link, {"decision": "reply", "text": "yes"})[0] == 400  # (an approval takes approve or deny)
    crowded = "&".join(f"f{n}=x" for n in range(50)) + "&decision=maybe"  # (a form of many fields: no 500)
    assert _page("POST", link, None, crowded)[0] == 400
    assert _page("POST", link, None, "decision=approve&decision=deny")[0] == 400  # (says two things)
    status, page = _page("POST", link, None, "decision=deny&message=why")  # (a field it lacks: not lost)
    assert status == 400 and "does not take (&#x27;message&#x27;" in page
    status, page = _page("POST", link, {"decision": "deny", "text": "日" * 2001})  # (not cut: refused)
    assert status == 400 and "2001 characters, the most is 2000" in page
    configured = handler_environment.model_copy(update={"decision_links_as": ANN})
    ids = ("link-refused", turn["turnId"], turn["interactions"][0]["requestId"])
    expired = _issued(configured, ids, 1_000_000, "e-old")
    assert _page("POST", f"{url}/decide/{expired}", APPROVE)[0] == 410
    ben = configured.model_copy(update={"decision_links_as": "arn:aws:iam::000000000000:user/approver-ben"})
    foreign = _issued(ben, ids, 4_000_000_000, "e-ben")
    assert _page("POST", f"{url}/decide/{foreign}", APPROVE)[0] == 403
    monkeypatch.delenv("DECISION_LINKS_AS")  # (links turned off: every link stops working)
    forget()
    try:
        assert _page("POST", link, APPROVE)[0] == 404
    finally:
        monkeypatch.undo()
        forget()
    assert _question(url, "link-refused", turn)["status"] == "requested"
    # Its turn canceled: the question is no longer live, a 410 as the API answers (not a 409: nothing conflicts)
    assert call(url, "POST", f"/sessions/link-refused/turns/{turn['turnId']}/cancel")[0] == 200
    status, page = _page("POST", link, APPROVE)
    assert status == 410 and "Refused: the question is withdrawn" in page, page


def test_in_chromium_the_link_shows_the_question_and_approve_decides(
    links: EventResources, url: str, browser: Any
) -> None:
    from playwright.sync_api import expect

    turn, link = _ask(url, links, "link-browser")
    page = browser.new_page()
    try:
        page.goto(link)
        expect(page.get_by_role("heading")).to_contain_text("delete_record")
        expect(page.locator("pre")).to_contain_text("link-browser")
        page.get_by_role("button", name="Approve: run it").click()  # (the box not ticked: the browser sends nothing)
        expect(page.get_by_label("I confirm: approving runs delete_record link-browser")).to_be_focused()
        assert _question(url, "link-browser", turn)["status"] == "requested"
        page.get_by_label("I confirm: approving runs delete_record link-browser").check()
        page.get_by_role("button", name="Approve: run it").click()
        expect(page.get_by_role("heading")).to_have_text("Recorded")
        expect(page.locator("body")).to_contain_text("the turn is going on")
    finally:
        page.close()
    _settles(url, "link-browser", turn)
    assert _question(url, "link-browser", turn)["answeredBy"] == ANN


def _minted(key: LinkKey, held: dict[str, Any]) -> str:
    """A link signed by ``key`` that nothing issued: what someone holding the key could make."""
    payload = base64.urlsafe_b64encode(json.dumps(held).encode()).decode().rstrip("=")
    mac = base64.urlsafe_b64encode(key.mac(f"decision-link\n{payload}".encode())).decode().rstrip("=")
    return f"{payload}.{mac}"


def test_a_link_made_with_the_key_but_never_issued_decides_nothing(
    links: EventResources, url: str, handler_environment: Settings
) -> None:
    """Even the key mints nothing: everything a link holds but its secret is public (the ids the API and
    the bus show, the approver, the expiry), so a link rebuilt from them, with the real link's id and
    signed by the key, is refused for want of the secret; so are a fresh id and an id moved to another
    question. The question stays open, and the real link still decides."""
    turn, link = _ask(url, links, "link-minted")
    token = link.rsplit("/", 1)[1]
    held = json.loads(base64.urlsafe_b64decode(token.partition(".")[0] + "=" * 4))
    key = LinkKey(handler_environment)
    rebuilt = {**held, "n": "a-guess-at-the-secret"}
    for forged in (rebuilt, {**held, "j": "a-fresh-link-id0"}, {**held, "r": "r" + "0" * 24}):
        status, page = _page("POST", f"{url}/decide/{_minted(key, forged)}", APPROVE)
        assert status == 404 and "never issued" in page, page
        assert _page("GET", f"{url}/decide/{_minted(key, forged)}")[0] == 404
    assert _question(url, "link-minted", turn)["status"] == "requested"
    assert _page("POST", link, {"decision": "deny"})[0] == 200
    _settles(url, "link-minted", turn)  # (the denial told to the agent: nothing left running after the test)


def test_no_value_in_a_functions_environment_signs_a_link(links: EventResources, url: str) -> None:
    """What lambda:GetFunctionConfiguration shows (every environment variable) signs nothing: the issued
    link itself, its MAC remade (as links and cursors were) with any of those values, is refused."""
    import hashlib
    import hmac
    import os

    turn, link = _ask(url, links, "link-environment")
    payload = link.rsplit("/", 1)[1].partition(".")[0]
    tried = 0
    for value in {v for v in os.environ.values() if v}:
        for size in (16, 32):
            mac = hmac.new(value.encode(), f"decision-link\n{payload}".encode(), hashlib.sha256).digest()[:size]
            token = f"{payload}.{base64.urlsafe_b64encode(mac).decode().rstrip('=')}"
            if len(token) <= decision_links.MAX_LINK_CHARS:
                assert _page("POST", f"{url}/decide/{token}", APPROVE)[0] == 404
                tried += 1
    assert tried > 10 and _question(url, "link-environment", turn)["status"] == "requested"
    assert _page("POST", link, APPROVE)[0] == 200  # (the issued link, as issued, decides)
    _settles(url, "link-environment", turn)
