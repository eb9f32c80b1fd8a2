"""A question that needs two approvers, in a real headless Chromium signed in as two people of the local
issuer: the first sees "1 of 2" and cannot approve again; the second's approval settles it; a person
who started the turn never sees their own question to approve, and the API refuses it naming the rule."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from resumable.config import Settings
from resumable.local.issuer import LocalIssuer
from tests.e2e.browser import approve_on, screenshot
from tests.e2e.local_api import jwt_api, settings
from tests.e2e.test_sign_in import call, card, sign_in

pytestmark = pytest.mark.slow

RULES = '[{"tools": ["delete_*"], "required": 2, "name": "two-person delete"}]'


@pytest.fixture(scope="module")
def url(handler_environment: Settings, issuer: LocalIssuer) -> Iterator[str]:
    """The local API in JWT mode, with a deployment rule: deleting needs two approvers."""
    with jwt_api(issuer, APPROVAL_RULES=RULES) as url:
        yield url


def start(url: str, issuer: LocalIssuer, user: str, session: str) -> dict[str, Any]:
    status, turn = call(
        url, "POST", f"/sessions/{session}/turns", issuer.mint(user), {"prompt": "delete the prod-db record"}
    )
    assert (status, turn["status"]) == (201, "waiting"), turn
    return turn


def test_two_people_approve_and_the_first_sees_it_wait_for_the_second(
    url: str, issuer: LocalIssuer, browser: Any
) -> None:
    start(url, issuer, "bob", "two-bob")

    alice = sign_in(browser, url, "alice")
    asked = card(alice, "two-bob")
    expect(asked.locator(".approvals")).to_have_text("0 of 2 approvals · rule two-person delete")
    approve_on(asked)
    expect(alice.locator("#outcomes li").first).to_contain_text(
        "your approval is 1 of 2; the question waits for another approver"
    )
    expect(asked.locator(".approvals")).to_contain_text("1 of 2 approvals (alice)")
    expect(asked.locator(".approvals")).to_contain_text("you approved: it waits for another approver")
    expect(asked.get_by_role("button", name="Approve")).to_be_disabled()
    screenshot(alice, "inbox-one-of-two")
    # Read again from the API, on this page and on a new one: still there, still waiting on another.
    alice.get_by_role("button", name="Refresh").click()
    alice.wait_for_function("() => Number(document.body.dataset.refreshes) >= 2")
    expect(asked.get_by_role("button", name="Approve")).to_be_disabled()
    again = card(sign_in(browser, url, "alice"), "two-bob")
    expect(again.locator(".approvals")).to_contain_text("1 of 2 approvals (alice) · rule two-person delete · you")
    expect(again.get_by_role("button", name="Approve")).to_be_disabled()

    dave = sign_in(browser, url, "dave")
    theirs = card(dave, "two-bob")
    expect(theirs.locator(".approvals")).to_have_text("1 of 2 approvals (alice) · rule two-person delete")
    approve_on(theirs)
    expect(dave.locator("#outcomes li").first).to_contain_text("the turn is completed")
    status, listed = call(url, "GET", "/sessions/two-bob/interactions", issuer.mint("bob"))
    assert status == 200
    [settled] = listed["interactions"]
    assert (settled["answeredBy"], [a["by"] for a in settled["approvals"]]) == ("dave", ["alice", "dave"])


def test_the_audit_trail_on_the_page_shows_each_approval_with_its_sign_in_and_exports_it(
    url: str, issuer: LocalIssuer, browser: Any
) -> None:
    turn = start(url, issuer, "bob", "audit-bob")
    request = turn["interactions"][0]["requestId"]
    path = f"/sessions/audit-bob/turns/{turn['turnId']}/interactions/{request}"
    for approver in ("alice", "dave"):
        assert call(url, "POST", path, issuer.mint(approver), {"response": {"decision": "approve"}})[0] == 200

    dave = sign_in(browser, url, "dave")
    audit = dave.locator("#audit")
    audit.locator("summary").click()
    audit.get_by_label("Principal").fill("alice")
    audit.get_by_role("button", name="Show").click()
    expect(audit.locator("#audit-status")).to_contain_text("records from")
    rows = audit.locator("tbody tr").filter(has_text=request)
    expect(rows).to_have_count(2)  # alice's vote, and the decision that counted it
    expect(rows.nth(1)).to_contain_text("2 approvals: alice, dave")
    screenshot(dave, "inbox-audit")
    dave.set_viewport_size({"width": 390, "height": 844})  # a phone: each record a card, every field on screen
    by = rows.nth(1).locator("td[data-label=By]")
    expect(by).to_have_text("dave")
    box = by.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390, box
    screenshot(dave, "inbox-audit-phone")
    audit.get_by_label("To (included)").fill("2020-01-01")  # before From: said so, nothing read
    audit.get_by_role("button", name="Show").click()
    expect(audit.locator("#audit-status")).to_contain_text("Nothing read: “To” (2020-01-01) is before “From”")
    expect(audit.locator("tbody tr")).to_have_count(0)
    audit.get_by_label("To (included)").fill("")
    with dave.expect_download() as downloading:
        audit.get_by_role("button", name="Export JSON lines").click()
    exported = [json.loads(line) for line in downloading.value.path().read_text(encoding="utf-8").splitlines()]
    expect(audit.locator("#audit-status")).to_contain_text(f"Exported {len(exported)} records")
    mine = [e for e in exported if e["requestId"] == request]
    assert [(e["kind"], e["by"]) for e in mine] == [("vote", "alice"), ("decision", "dave")]
    assert [v["authentication"] for v in mine[1]["votes"]] == [
        {"method": "jwt", "subject": who, "issuer": issuer.url} for who in ("alice", "dave")
    ]
    bob = sign_in(browser, url, "bob")  # not an approver: the audit trail is not theirs to read
    bob.locator("#audit summary").click()
    bob.locator("#audit").get_by_role("button", name="Show").click()
    expect(bob.locator("#audit-status")).to_contain_text("only approvers may read the audit trail")


def test_whoever_started_the_turn_may_not_approve_it_and_never_sees_it_to_approve(
    url: str, issuer: LocalIssuer, browser: Any
) -> None:
    turn = start(url, issuer, "alice", "two-alice")
    [asked] = turn["interactions"]
    path = f"/sessions/two-alice/turns/{turn['turnId']}/interactions/{asked['requestId']}"

    status, refused = call(url, "POST", path, issuer.mint("alice"), {"response": {"decision": "approve"}})
    assert status == 403 and refused["code"] == "forbidden"
    assert "the approval rule 'two-person delete' does not let the principal who started a turn" in refused["message"]

    alice = sign_in(browser, url, "alice")  # (signed in once the inbox was read)
    expect(card(alice, "two-alice")).to_have_count(0)
    dave = sign_in(browser, url, "dave")
    expect(card(dave, "two-alice")).to_have_count(1)
    # ...though she sees it among her turns' questions, waiting for others, and may withdraw it
    mine = alice.locator("#mine li", has_text="two-alice")
    expect(mine).to_contain_text("waiting for 2 approvals from any approver (0 so far); you started this turn, so")
    mine.get_by_role("button", name="Withdraw (deny) delete_record prod-db").click()
    expect(alice.locator("#outcomes")).to_contain_text("Withdrawn: delete_record prod-db in session two-alice")
    read = call(url, "GET", f"/sessions/two-alice/turns/{turn['turnId']}", issuer.mint("alice"))[1]
    assert read["interactions"][0]["decision"] == "denied" and read["interactions"][0]["answeredBy"] == "alice"
    # Cancel the turn asks once more (it cannot be undone), then cancels
    again = start(url, issuer, "alice", "two-alice-again")
    alice.get_by_role("button", name="Refresh").click()
    mine = alice.locator("#mine li", has_text="two-alice-again")
    mine.get_by_role("button", name="Cancel the turn").click()
    asking = mine.get_by_role("button", name="Yes, cancel the turn of session two-alice-again")
    drawn = asking.element_handle()
    alice.get_by_role("button", name="Refresh").click()  # (the list drawn again, as polling does: it still asks)
    drawn.wait_for_element_state("hidden")  # (the button drawn before is gone: the list was drawn again)
    expect(asking).to_be_visible()
    path = f"/sessions/two-alice-again/turns/{again['turnId']}"
    assert call(url, "GET", path, issuer.mint("alice"))[1]["status"] == "waiting", "one press cancels nothing"
    mine.get_by_role("button", name="Yes, cancel the turn of session two-alice-again").click()
    expect(alice.locator("#outcomes")).to_contain_text("Canceled: delete_record prod-db in session two-alice-again")
    assert call(url, "GET", path, issuer.mint("alice"))[1]["status"] == "canceled"


def _sweep_once_escalation_is_due(asked: float) -> None:
    """Run the Sweeper as its schedule would, once the rule's 1 s has passed since the question was
    ``asked`` (whatever else ran meanwhile)."""
    from resumable.local.functions import ROOT
    from tools.invoke import invoke

    time.sleep(max(0.0, asked + 1.05 - time.time()))
    invoke("SweeperFunction", json.loads((ROOT / "events" / "schedules" / "sweep.json").read_text()))


def test_a_question_nobody_settled_in_time_is_escalated_and_shows_so_to_the_one_it_escalated_to(
    url: str, issuer: LocalIssuer, browser: Any
) -> None:
    rules = [{"tools": ["delete_*"], "approvers": ["alice"], "escalate_after": 1, "escalate_to": ["dave"],
              "name": "alice, then dave"}]  # fmt: skip
    with settings(APPROVAL_RULES=json.dumps(rules)):
        start(url, issuer, "bob", "esc-bob")
        asked = time.time()  # (after the question was asked)
        dave = sign_in(browser, url, "dave")
        expect(card(dave, "esc-bob")).to_have_count(0)  # not his to answer yet

        _sweep_once_escalation_is_due(asked)

        dave.get_by_role("button", name="Refresh").click()
        escalated = card(dave, "esc-bob")
        expect(escalated.locator(".approvals")).to_have_text(
            "0 of 1 approvals · rule alice, then dave · escalated to dave"
        )
        screenshot(dave, "inbox-escalated")
        approve_on(escalated)
        expect(dave.locator("#outcomes li").first).to_contain_text("the turn is completed")
