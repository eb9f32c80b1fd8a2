"""One destructive question (the demo's delete_record), offered on every channel at once: the inbox page,
the ``resumable`` command, Slack (the stand-in, playing Slack's client) and the e-mail's decision link.
Each asks for the confirmation that names what will run before it sends anything, and nothing is
recorded until one of them is confirmed; then it is recorded once, and every other channel says so."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from resumable.api.app import forget
from resumable.config import Settings
from resumable.local.events import EventResources, publishing, read_mail
from resumable.local.slack import USER, LocalSlack, slack_locally
from resumable.local.template import functions_in_process
from tests.e2e.local_api import APPROVER, call, cli
from tests.e2e.test_inbox_page import card
from tests.patience import HANG_SECONDS, eventually

pytestmark = pytest.mark.slow

SESSION = "confirm-everywhere"
WHAT = "delete_record confirm-db"  # (what approving runs, as each channel names it)
MAILED_LINK = re.compile(r"^Or decide without signing in \(its page decides, once\): (\S+)$", re.MULTILINE)


@pytest.fixture(scope="module")
def desk(handler_environment: Settings, url: str) -> Iterator[tuple[LocalSlack, EventResources]]:
    """make run's desk with every channel on: the functions, the bus (e-mail with decision links as the
    approver ann), and Slack (its user U0LOCAL answers as ann too)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("API_URL", url)
        env.setenv("DECISION_LINKS_AS", APPROVER)
        forget()
        with (
            functions_in_process() as lambdas,
            publishing(handler_environment) as (resources, configured),
            slack_locally(configured, f"{url}/slack/interactions", APPROVER) as slack,
        ):
            for variable, value in slack.environment.items():
                env.setenv(variable, value)
            forget()
            yield slack, resources
            assert lambdas.wait(HANG_SECONDS), "a run handed on did not end"
        forget()


def _status(url: str, turn: dict[str, Any]) -> tuple[str, str]:
    read = call(url, "GET", f"/sessions/{SESSION}/turns/{turn['turnId']}", principal=APPROVER)[1]
    return read["status"], read["interactions"][0]["status"]


def _page(method: str, link: str, form: dict[str, str] | None = None) -> tuple[int, str]:
    data = urlencode(form).encode() if form is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(link, data=data, method=method)) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_page_cli_slack_and_link_each_ask_for_the_confirmation_before_anything_is_recorded(
    desk: tuple[LocalSlack, EventResources], url: str, local_credentials: Path, browser: Any
) -> None:
    slack, resources = desk
    status, turn = call(url, "POST", f"/sessions/{SESSION}/turns", {"prompt": "delete the confirm-db record"})
    assert status == 201 and turn["status"] == "waiting", turn
    request = turn["interactions"][0]["requestId"]
    waiting = ("waiting", "requested")

    # The page: Approve shows what will run, with the focus on Cancel; nothing is sent until "Yes, run ..."
    page = browser.new_page()
    try:
        page.goto(f"{url}/inbox")
        asked = card(page, SESSION)
        asked.get_by_role("button", name="Approve").click()
        expect(asked.locator(".confirm-text")).to_contain_text(f"Approving runs {WHAT}")
        expect(asked.get_by_role("button", name="Cancel")).to_be_focused()
        assert _status(url, turn) == waiting
        asked.get_by_role("button", name="Cancel").click()
    finally:
        page.close()

    # The command: without --yes (and no terminal to type the name in) it sends nothing
    said = cli(url, local_credentials, "approve", request, profile="approver")
    assert said.returncode == 2 and "pass --yes" in said.stderr, said.stderr
    assert _status(url, turn) == waiting

    # Slack: the message shows the risk, and its Approve opens the dialog first (the stand-in sends nothing)
    def posted() -> Any:
        return next((m for m in slack.stand_in.in_channel("#approvals") if m.request_id == request), None)

    message = eventually(posted, "the question's Slack message")
    assert "*Risk: destructive*" in str(message.blocks)
    with pytest.raises(LookupError, match=r'asks first: "Run it\? Approving runs delete_record \(risk: destructive\)'):
        slack.stand_in.press(request, "approve", USER)
    assert _status(url, turn) == waiting

    # The e-mail's decision link: its page has the box that names it; a form without it is refused
    def mailed() -> str | None:
        found = [MAILED_LINK.search(text) for _, text in read_mail(resources.mail_queue_url, idle_seconds=0)]
        return next((m.group(1) for m in found if m and request in m.string), None)

    link = eventually(mailed, "the question's e-mail, with its link")
    status, shown = _page("GET", link)
    assert status == 200 and f"I confirm: approving runs <b>{WHAT}</b>" in shown
    status, shown = _page("POST", link, {"decision": "approve"})
    assert status == 400 and "needs its confirmation" in shown
    assert _status(url, turn) == waiting

    # Confirmed in Slack: recorded once, as ann; the turn goes on; the link and the command say it is answered
    assert slack.stand_in.send(slack.stand_in.press(request, "approve", USER, confirmed=True))[0] == 200
    eventually(lambda: _status(url, turn) == ("completed", "answered") or None, "the turn completed")
    assert _page("POST", link, {"decision": "approve", "confirm": "yes"})[0] == 409
    again = cli(url, local_credentials, "approve", "--yes", SESSION, turn["turnId"], request, profile="approver")
    assert again.returncode == 0 and f"was already answered by {APPROVER}" in again.stderr, again.stderr
    audit = call(url, "GET", "/audit?outcome=approved", principal=APPROVER)[1]["records"]
    assert [r["authentication"]["method"] for r in audit if r["sessionId"] == SESSION] == ["slack"]
