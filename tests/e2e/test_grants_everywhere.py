"""A standing grant given, used, listed and revoked as people do it: on the inbox page (Also allow,
then Standing grants' Revoke) and with the ``resumable`` command (approve --grant, grants, revoke),
against the local API and the demo's destructive delete_record, under a rule that allows grants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from resumable.api.app import forget
from resumable.config import Settings
from resumable.local.server import DEFAULT_PRINCIPAL
from resumable.local.template import functions_in_process
from tests.e2e.local_api import APPROVER, call, cli
from tests.e2e.test_inbox_page import card
from tests.patience import HANG_SECONDS

pytestmark = pytest.mark.slow

SESSION = "grants-everywhere"
RULE = {"tools": ["delete_*"], "name": "deletes", "grants": {"max": "8h", "destructive": True}}


@pytest.fixture(scope="module")
def granting(handler_environment: Settings, url: str) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("APPROVAL_RULES", json.dumps([RULE]))
        # (the page's requests are unsigned: the local principal's, an approver here, as under make run)
        env.setenv("APPROVER_PRINCIPALS", f"arn:aws:iam::000000000000:user/approver-*,{DEFAULT_PRINCIPAL}")
        forget()
        with functions_in_process() as lambdas:
            yield url
            assert lambdas.wait(HANG_SECONDS), "a run handed on did not end"
        forget()


def _turn(url: str, prompt: str) -> dict[str, Any]:
    status, turn = call(url, "POST", f"/sessions/{SESSION}/turns", {"prompt": prompt})
    assert status == 201, turn
    return dict(turn)


def revoked_at(url: str) -> str:
    [ended] = call(url, "GET", "/grants?status=all", principal=APPROVER)[1]["grants"]
    return str(ended["revokedAt"])


def test_a_grant_given_on_the_page_lets_the_next_call_run_and_the_command_lists_and_revokes_it(
    granting: str, local_credentials: Path, browser: Any
) -> None:
    url = granting
    first = _turn(url, "delete the test-db record")
    assert first["status"] == "waiting"
    page = browser.new_page()
    try:
        page.goto(f"{url}/inbox")
        asked = card(page, SESSION)
        choice = asked.get_by_label("Also allow delete_record without a question")
        choice.select_option(label="delete_record for 1 hour in this session")
        asked.get_by_role("button", name="Approve").click()
        asked.get_by_role("button", name="Yes, run").click()  # (destructive: the confirmation first)
        expect(page.locator("#outcomes")).to_contain_text("delete_record now runs without a question in this session")
        expect(page.locator("#grant-list")).to_contain_text(f"delete_record · session {SESSION}")
        expect(page.locator("#grant-list")).to_contain_text(f"granted by {DEFAULT_PRINCIPAL} (you) under deletes")

        # The same tool again in the session: no question; the event and the trail name the grant
        second = _turn(url, "delete the dev-db record")
        assert (second["status"], second["interactions"]) == ("completed", []), second
        records = call(url, "GET", "/audit?outcome=ran", principal=APPROVER)[1]["records"]
        granted = [r for r in records if r["sessionId"] == SESSION and r.get("grant")]
        assert len(granted) == 1 and granted[0]["grant"]["by"] == DEFAULT_PRINCIPAL
        # (who started that turn granted it: separation of duties, from the trail alone, lists the call)
        checked = cli(url, local_credentials, "admin", "audit", "--check-separation", profile="approver")
        assert checked.returncode == 1 and granted[0]["requestId"] in checked.stdout, checked.stdout + checked.stderr

        # The command lists it and revokes it; the next call asks again
        listed = cli(url, local_credentials, "grants", profile="approver")
        assert listed.returncode == 0 and "live    delete_record  session grants-everywhere" in listed.stdout, listed
        assert DEFAULT_PRINCIPAL in listed.stdout and "(you)" not in listed.stdout, listed.stdout
        [grant] = call(url, "GET", "/grants", principal=APPROVER)[1]["grants"]
        revoked = cli(url, local_credentials, "revoke", grant["grantId"], profile="approver")
        assert revoked.returncode == 0 and "revoked by " + APPROVER in revoked.stdout, revoked
        ended = cli(url, local_credentials, "grants", "--all", profile="approver")
        assert f"revoked {revoked_at(url)} by {APPROVER}" in ended.stdout, ended.stdout
        junk = cli(url, local_credentials, "revoke", "../x", profile="approver")
        assert junk.returncode == 2 and "is not a grant id" in junk.stderr, junk.stderr
        third = _turn(url, "delete the staging-db record")
        assert third["status"] == "waiting"

        # Granted from the command this time (--yes: the destructive call's confirmation), then revoked on the page
        request = third["interactions"][0]["requestId"]
        given = cli(url, local_credentials, "approve", request, "--yes", "--grant", "30m", profile="approver")
        assert given.returncode == 0, given.stderr
        page.reload()
        expect(page.locator("#grant-list")).to_contain_text(f"delete_record · session {SESSION}")
        page.get_by_role("button", name="Revoke the grant of delete_record").click()
        expect(page.locator("#outcomes")).to_contain_text("Revoked: delete_record asks again")
        expect(page.locator("#grants")).to_be_hidden()
        assert call(url, "GET", "/grants", principal=APPROVER)[1]["grants"] == []
    finally:
        page.close()


def test_the_command_refuses_a_grant_the_question_cannot_carry_and_sends_nothing(
    granting: str, local_credentials: Path
) -> None:
    said = cli(granting, local_credentials, "approve", "r" + "0" * 24, "--grant", "forever", profile="approver")
    assert said.returncode == 2 and "is not a duration" in said.stderr, said.stderr
    said = cli(granting, local_credentials, "approve", "r" + "0" * 24, "--grant-inputs", "{}", profile="approver")
    assert said.returncode == 2 and "go with --grant DURATION" in said.stderr, said.stderr
