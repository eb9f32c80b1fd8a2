"""The inbox page in a real headless Chromium against the local API: questions appear as turns ask
them; a person approves, denies with a message and edits; a question answered in another tab is a
409 that shows their answer, a canceled one a 410; on an IAM API that a browser cannot sign, the page
says so."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from resumable.api.app import forget
from resumable.config import Settings
from resumable.local.server import make_server
from tests.e2e.browser import WAIT_MS, refreshed, screenshot
from tests.e2e.local_api import call

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _editable(handler_environment: Settings) -> Iterator[None]:
    """delete_record's input may be edited before it is approved (the deployment's policy)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("APPROVAL_EDITS", "delete_record")
        forget()
        yield
    forget()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    yield opened
    context.close()


@pytest.fixture
def own_url(handler_environment: Settings, request: pytest.FixtureRequest) -> Iterator[str]:
    """A local API whose unsigned callers (the page) are a principal of this test's own: its inbox
    holds only the questions this test asks as that principal."""
    server = make_server(port=0, principal=f"arn:aws:iam::000000000000:user/{request.node.name[:40]}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def start(url: str, session: str, target: str) -> dict[str, Any]:
    status, turn = call(url, "POST", f"/sessions/{session}/turns", {"prompt": f"delete the {target} record"})
    assert status == 201 and turn["status"] == "waiting", turn
    return dict(turn)


def card(page: Any, session: str) -> Any:
    return page.locator("li.card", has=page.locator("dd.session", has_text=session))


def test_cards_appear_and_a_person_approves_denies_and_edits(own_url: str, page: Any) -> None:
    url = own_url
    page.goto(f"{url}/inbox?refresh=1")
    expect(page.locator("#empty")).to_be_visible()
    expect(page.locator("#empty")).to_contain_text("Nothing is waiting")

    start(url, "page-approve", "prod-db")
    start(url, "page-deny", "staging-db")
    start(url, "page-edit", "test-db")
    expect(page.locator("li.card")).to_have_count(3)
    expect(page.locator("#empty")).to_be_hidden()
    first = card(page, "page-approve")
    expect(first.locator(".path li")).to_have_text(["orchestrator", "db_admin"])
    expect(first.locator(".tool")).to_have_text("delete_record")
    expect(first.locator("pre.input")).to_have_text('{\n  "name": "prod-db"\n}')
    expect(first.locator(".countdown")).to_contain_text("in 23h")
    screenshot(page, "inbox")

    # What a person types survives the refreshes that bring in new questions.
    denied = card(page, "page-deny")
    denied.get_by_role("button", name="Deny delete_record in session page-deny…").click()
    denied.get_by_label("Why (the agent is told)").fill("not staging")
    start(url, "page-later", "later-db")
    expect(page.locator("li.card")).to_have_count(4)
    refreshed(page, 2)
    expect(denied.get_by_label("Why (the agent is told)")).to_have_value("not staging")

    # Approve from the keyboard: the button's accessible name says what it approves.
    approve = page.get_by_role("button", name="Approve delete_record in session page-approve")
    approve.focus()
    page.keyboard.press("Enter")
    outcome = page.locator("#outcomes li").first
    expect(outcome).to_contain_text("Approved: delete_record in session page-approve")
    expect(outcome).to_contain_text("the turn is completed: record prod-db deleted")
    expect(card(page, "page-approve")).to_have_count(0)

    denied.get_by_role("button", name="Deny", exact=True).click()
    expect(page.locator("#outcomes li").first).to_contain_text(
        "the turn is completed: DENIED: not staging. The tool 'delete_record' did not run."
    )
    expect(card(page, "page-deny")).to_have_count(0)

    edited = card(page, "page-edit")
    edited.get_by_role("button", name="Edit the input of delete_record in session page-edit…").click()
    editor = edited.get_by_label("Input to approve with (JSON)")
    expect(editor).to_have_value('{\n  "name": "test-db"\n}')
    editor.fill('{"name": 7}')
    edited.get_by_role("button", name="Approve with this input").click()
    expect(edited.locator(".edit-error")).to_contain_text("does not fit the input of 'delete_record'")
    expect(edited).to_be_visible()  # refused: nothing was answered, the question stays
    editor.fill("{not json")
    edited.get_by_role("button", name="Approve with this input").click()
    expect(edited.locator(".edit-error")).to_contain_text("This is not JSON")
    editor.fill('{"name": "test-db-copy"}')
    edited.get_by_role("button", name="Approve with this input").click()
    expect(page.locator("#outcomes li").first).to_contain_text(
        "Approved with your edit: delete_record in session page-edit"
    )
    expect(page.locator("#outcomes li").first).to_contain_text(
        'approved with {"name": "test-db-copy"} instead of {"name": "test-db"}'
    )
    expect(page.locator("li.card")).to_have_count(1)
    expect(page.locator("#status")).to_contain_text("1 question is waiting")
    screenshot(page, "inbox-answered")


def test_a_question_answered_in_another_tab_is_a_409_that_shows_their_answer(url: str, browser: Any) -> None:
    start(url, "page-race", "race-db")
    context = browser.new_context()
    mine, theirs = context.new_page(), context.new_page()
    for tab in (mine, theirs):
        tab.set_default_timeout(WAIT_MS)
        tab.goto(f"{url}/inbox?refresh=0")  # loaded once: the card stays until someone answers here
        expect(card(tab, "page-race")).to_have_count(1)
    card(theirs, "page-race").locator(".deny-open").click()
    card(theirs, "page-race").get_by_label("Why (the agent is told)").fill("they said no")
    card(theirs, "page-race").get_by_role("button", name="Deny", exact=True).click()
    expect(theirs.locator("#outcomes li").first).to_contain_text("Denied")

    card(mine, "page-race").get_by_role("button", name="Approve").click()
    late = mine.locator("#outcomes li").first
    expect(late).to_contain_text("Someone else answered delete_record in session page-race first")
    expect(late).to_contain_text('their answer: deny ("they said no") by arn:aws:iam::000000000000:user/local')
    expect(late).to_contain_text("Your answer was not recorded")
    expect(card(mine, "page-race")).to_have_count(0)
    screenshot(mine, "inbox-409")
    context.close()


def test_a_canceled_question_is_a_410(url: str, page: Any) -> None:
    turn = start(url, "page-cancel", "gone-db")
    page.goto(f"{url}/inbox?refresh=0")
    expect(card(page, "page-cancel")).to_have_count(1)
    assert call(url, "POST", f"/sessions/page-cancel/turns/{turn['turnId']}/cancel")[0] == 200
    card(page, "page-cancel").get_by_role("button", name="Approve").click()
    late = page.locator("#outcomes li").first
    expect(late.locator("strong")).to_have_text("Too late for delete_record in session page-cancel")
    expect(late).to_contain_text("the question was canceled or expired (410): interaction")
    expect(late).to_contain_text("can no longer be answered; nothing was answered")
    expect(card(page, "page-cancel")).to_have_count(0)


def test_on_a_phone_nothing_is_wider_than_the_screen(url: str, browser: Any) -> None:
    start(url, "page-phone", "phone-db")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone = context.new_page()
    phone.set_default_timeout(WAIT_MS)
    phone.goto(f"{url}/inbox?refresh=0")
    expect(card(phone, "page-phone")).to_have_count(1)
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(phone, "inbox-phone")
    context.close()


def test_on_an_iam_api_the_page_says_a_browser_cannot_sign_and_how_to_switch(
    handler_environment: Settings, browser: Any
) -> None:
    server = make_server(port=0, refuse_unsigned=True)  # as on AWS: an unsigned request is refused
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = browser.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/inbox")
        notice = page.locator("#notice")
        expect(notice).to_contain_text("IAM authorization (AuthMode=IAM), which a browser cannot sign")
        expect(notice).to_contain_text("AuthMode=JWT")
        expect(page.locator("li.card")).to_have_count(0)
        page.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_question_that_goes_while_someone_types_keeps_their_text_and_says_why(url: str, page: Any) -> None:
    turn = start(url, "page-typing", "dev-db")
    page.goto(f"{url}/inbox?refresh=1")
    typing = card(page, "page-typing")
    typing.locator(".deny-open").click()
    typing.get_by_label("Why (the agent is told)").fill("half a thought")
    assert call(url, "POST", f"/sessions/page-typing/turns/{turn['turnId']}/cancel")[0] == 200
    expect(typing.locator(".card-error")).to_contain_text("This question is no longer waiting")
    expect(typing.get_by_label("Why (the agent is told)")).to_have_value("half a thought")
    expect(typing.get_by_role("button", name="Deny", exact=True)).to_be_disabled()
    expect(page.locator("#outcomes li").first).to_contain_text(
        "delete_record in session page-typing is no longer waiting"
    )
    typing.get_by_role("button", name="Cancel").click()
    expect(card(page, "page-typing")).to_have_count(0)


def test_a_list_read_before_an_answer_never_brings_the_answered_question_back(own_url: str, page: Any) -> None:
    start(own_url, "page-stale", "prod-db")
    stale: dict[str, Any] = {}

    def remember(response: Any) -> None:
        if "/interactions?" in response.url and not stale:
            stale["body"] = response.text()

    page.on("response", remember)
    page.goto(f"{own_url}/inbox?refresh=1")
    expect(card(page, "page-stale")).to_have_count(1)
    page.wait_for_function("() => Number(document.body.dataset.refreshes || 0) >= 1")
    assert "page-stale" in stale["body"]
    card(page, "page-stale").get_by_role("button", name="Approve").click()
    expect(page.locator("#outcomes li").first).to_contain_text("Approved: delete_record in session page-stale")
    # Every later list is the one read before the answer (as a slow read that finishes late would be).
    page.route(
        "**/interactions?*",
        lambda route: route.fulfill(status=200, body=stale["body"], content_type="application/json"),
    )
    refreshed(page, 2)
    expect(card(page, "page-stale")).to_have_count(0)


def test_from_the_keyboard_closing_a_form_never_leaves_focus_on_approve(own_url: str, page: Any) -> None:
    start(own_url, "page-keys", "prod-db")
    page.goto(f"{own_url}/inbox?refresh=0")
    page.get_by_role("button", name="Deny delete_record in session page-keys…").focus()
    page.keyboard.press("Enter")
    why = card(page, "page-keys").get_by_label("Why (the agent is told)")
    expect(why).to_be_focused()
    page.keyboard.type("not yet")
    page.keyboard.press("Escape")  # closes the form: focus goes back to Deny…, and Enter opens it again
    assert page.evaluate("document.activeElement.classList.contains('deny-open')")
    page.keyboard.press("Enter")
    expect(why).to_be_focused()
    expect(why).to_have_value("not yet")
    expect(card(page, "page-keys")).to_have_count(1)  # nothing was approved
