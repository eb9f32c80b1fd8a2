"""The inbox page in a real headless Chromium against the local API: questions appear as turns ask
them; a person approves, denies with a message and edits; a question answered in another tab is a
409 that shows their answer, a canceled one a 410; on an IAM API that a browser cannot sign, the page
says so."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from resumable.api.app import forget
from resumable.config import Settings
from resumable.local.lag import lagging
from resumable.local.server import make_server
from tests.e2e.browser import WAIT_MS, approve_on, refreshed, screenshot
from tests.e2e.local_api import APPROVER, call, settings

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

    asked = start(url, "page-approve", "prod-db")
    start(url, "page-deny", "staging-db")
    expect(page.locator("li.card")).to_have_count(2)
    expect(page.locator("#empty")).to_be_hidden()
    first = card(page, "page-approve")
    expect(first.locator(".path li")).to_have_text(["orchestrator", "db_admin"])
    # The headline says what approving does; the card says how risky it is, for whom, and why.
    expect(first.locator(".tool")).to_have_text("delete_record prod-db")
    expect(first.locator(".risk")).to_have_text("destructive")
    expect(first.locator(".impact")).to_have_text("Deletes the named record for good: there is no undo")
    expect(first.locator(".for")).to_contain_text("arn:aws:iam::000000000000:user/test_cards_appear")
    expect(first.locator(".prompt")).to_have_text("delete the prod-db record")
    expect(first.locator(".why")).to_have_text("You asked me to delete the record prod-db; delete_record does that.")
    expect(first.locator("pre.input")).to_have_text('{\n  "name": "prod-db"\n}')
    expect(first.locator(".request")).to_have_text(asked["interactions"][0]["requestId"])
    expect(first.locator(".countdown")).to_contain_text("in 23h")
    screenshot(page, "inbox")

    # What a person types survives the refreshes that bring in new questions.
    denied = card(page, "page-deny")
    denied.get_by_role("button", name="Deny delete_record in session page-deny…").click()
    denied.get_by_label("Why (the agent is told)").fill("not staging")
    start(url, "page-later", "later-db")
    expect(page.locator("li.card")).to_have_count(3)
    refreshed(page, 2)
    expect(denied.get_by_label("Why (the agent is told)")).to_have_value("not staging")

    # Approve from the keyboard: the button's accessible name says what it approves. A destructive
    # question asks again, naming what will happen, with the focus on Cancel: one key press runs nothing.
    approve = page.get_by_role("button", name="Approve delete_record in session page-approve")
    approve.focus()
    page.keyboard.press("Enter")
    confirm = first.locator(".confirm")
    expect(confirm).to_be_visible()
    expect(confirm.locator(".confirm-text")).to_have_text(
        "Approving runs delete_record prod-db: Deletes the named record for good: there is no undo. "
        "It cannot be taken back."
    )
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    screenshot(page, "inbox-confirm")
    page.keyboard.press("Enter")  # (Cancel)
    expect(confirm).to_be_hidden()
    expect(page.locator("#outcomes li")).to_have_count(0)
    approve.click()
    first.get_by_role("button", name="Yes, run delete_record prod-db").click()
    outcome = page.locator("#outcomes li").first
    expect(outcome).to_contain_text("Approved: delete_record in session page-approve")
    expect(outcome).to_contain_text("the turn is completed: record prod-db deleted")
    expect(card(page, "page-approve")).to_have_count(0)

    denied.get_by_role("button", name="Deny", exact=True).click()
    expect(page.locator("#outcomes li").first).to_contain_text(
        "the turn is completed: DENIED: not staging. The tool 'delete_record' did not run."
    )
    expect(card(page, "page-deny")).to_have_count(0)


def test_an_edit_is_shown_as_a_diff_then_approved(own_url: str, page: Any) -> None:
    url = own_url
    start(url, "page-edit", "test-db")
    start(url, "page-other", "other-db")
    page.goto(f"{url}/inbox?refresh=1")
    edited = card(page, "page-edit")
    edited.get_by_role("button", name="Edit the input of delete_record in session page-edit…").click()
    editor = edited.get_by_label("Input to approve with (JSON)")
    expect(editor).to_have_value('{\n  "name": "test-db"\n}')
    editor.fill('{"name": 7}')
    # First the changes as a diff of the input asked, then a second click approves exactly that.
    edited.get_by_role("button", name="Review the changes").click()
    expect(edited.locator("pre.diff")).to_have_text('- name: "test-db"\n+ name: 7')
    expect(edited.locator("pre.diff")).to_be_focused()  # (off the button: a second Enter approves nothing)
    edited.get_by_role("button", name="Approve delete_record with these changes").click()
    # A destructive question confirms an edit too, naming the input that would run.
    expect(edited.locator(".confirm-text")).to_have_text(
        'Approving runs delete_record {"name":7}: Deletes the named record for good: there is no undo. '
        "It cannot be taken back."
    )
    expect(edited.locator(".confirm-no")).to_be_focused()
    edited.get_by_role("button", name='Yes, run delete_record {"name":7}').click()
    expect(edited.locator(".edit-error")).to_contain_text("does not fit the input of 'delete_record'")
    expect(edited).to_be_visible()  # refused: nothing was answered, the question stays
    expect(editor).to_have_value('{"name": 7}')  # (and the text with it)
    editor.fill("{not json")
    edited.get_by_role("button", name="Review the changes").click()
    expect(edited.locator(".edit-error")).to_contain_text("This is not JSON")
    editor.fill('{"name": "test-db-copy"}')
    edited.get_by_role("button", name="Review the changes").click()
    expect(edited.locator("pre.diff")).to_have_text('- name: "test-db"\n+ name: "test-db-copy"')
    edited.get_by_role("button", name="Approve delete_record with these changes").click()
    edited.get_by_role("button", name='Yes, run delete_record {"name":"test-db-copy"}').click()
    expect(page.locator("#outcomes li").first).to_contain_text(
        "Approved with your edit: delete_record in session page-edit"
    )
    expect(page.locator("#outcomes li").first).to_contain_text(
        'approved with {"name": "test-db-copy"} instead of {"name": "test-db"}'
    )
    expect(page.locator("li.card")).to_have_count(1)
    expect(page.locator("#status")).to_contain_text("1 question is waiting")


def test_a_question_answered_elsewhere_is_a_409_that_says_whose_answer_stands(url: str, browser: Any) -> None:
    start(url, "page-race", "race-db")
    start(url, "page-twice", "twice-db")
    context = browser.new_context()
    mine, theirs = context.new_page(), context.new_page()
    for tab in (mine, theirs):
        tab.set_default_timeout(WAIT_MS)
        tab.goto(f"{url}/inbox?refresh=0")  # loaded once: the card stays until someone answers here
        expect(card(tab, "page-race")).to_have_count(1)
    # Someone else (an approver, at the API) denies one question...
    race = card(theirs, "page-race")
    path = f"/sessions/page-race/turns/{race.locator('dd.turn').inner_text()}/interactions/"
    said = call(url, "POST", path + race.get_attribute("data-request-id"), {"response": {"decision": "deny",
                "message": "they said no"}}, principal=APPROVER)  # fmt: skip
    assert said[0] == 200, said

    approve_on(card(mine, "page-race"))
    late = mine.locator("#outcomes li").first
    expect(late).to_contain_text("Someone else answered delete_record in session page-race first")
    expect(late).to_contain_text(f'their answer: deny ("they said no") by {APPROVER}')
    expect(late).to_contain_text("Your answer was not recorded")
    expect(card(mine, "page-race")).to_have_count(0)
    screenshot(mine, "inbox-409")

    # ... and the same person answers the other in one tab, then again in a stale one: theirs, it says.
    twice = card(theirs, "page-twice")
    twice.locator(".deny-open").click()
    twice.get_by_label("Why (the agent is told)").fill("not today")
    twice.get_by_role("button", name="Deny", exact=True).click()
    expect(theirs.locator("#outcomes li").first).to_contain_text("Denied")
    approve_on(card(mine, "page-twice"))
    again = mine.locator("#outcomes li").first
    expect(again.locator("strong")).to_have_text("You already answered delete_record in session page-twice")
    expect(again).to_contain_text("your answer stands: denied on this page at")
    context.close()


def test_a_canceled_question_is_a_410(url: str, page: Any) -> None:
    turn = start(url, "page-cancel", "gone-db")
    page.goto(f"{url}/inbox?refresh=0")
    expect(card(page, "page-cancel")).to_have_count(1)
    assert call(url, "POST", f"/sessions/page-cancel/turns/{turn['turnId']}/cancel")[0] == 200
    approve_on(card(page, "page-cancel"))
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
    approve_on(card(page, "page-stale"))
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


def test_a_question_that_asks_for_information_takes_a_reply_and_any_card_can_be_dismissed(
    own_url: str, page: Any
) -> None:
    url = own_url
    with settings(AGENT_FACTORY="tests.factories:asks_a_question"):
        status, asked = call(url, "POST", "/sessions/page-ask/turns", {"prompt": "pick a region"})
        assert status == 201, asked
    start(url, "page-dismiss", "dismiss-db")
    page.goto(f"{url}/inbox?refresh=1")
    question = card(page, "page-ask")
    expect(question.locator(".tool")).to_have_text("region")
    expect(question.get_by_role("button", name="Approve", exact=True)).to_be_hidden()
    question.get_by_role("button", name="Reply to region in session page-ask…").click()
    reply = question.get_by_label("Your reply (the agent is given it)")
    # The limit is shown as the text is typed; over it, nothing is sent and the text stays.
    reply.fill("x" * 9000)
    expect(question.locator(".reply-form .counter")).to_contain_text("too long, shorten it to send")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if request.method == "POST" else None)
    question.get_by_role("button", name="Send the reply").click()
    expect(page.locator("#outcomes li")).to_have_count(0)
    expect(reply).to_have_value("x" * 9000)
    expect(reply).to_be_focused()
    reply.fill("eu-west-1")
    expect(question.locator(".reply-form .counter")).to_have_text("9 of 8190 bytes")  # (the JSON quotes: 2)
    with settings(AGENT_FACTORY="tests.factories:asks_a_question"):  # (the turn resumes with its factory)
        question.get_by_role("button", name="Send the reply").click()
        expect(page.locator("#outcomes li").first).to_contain_text("Replied: region in session page-ask")
    assert len(sent) == 1, sent  # (the reply too long was refused here: only the one that fits was sent)
    expect(page.locator("#outcomes li").first).to_contain_text("the turn is completed: region chosen")

    # Dismissed: gone from this reader's inbox (refreshes do not bring it back), until Undo.
    page.get_by_role("button", name="Dismiss delete_record in session page-dismiss (hide it from your inbox)").click()
    dismissed = page.locator("#outcomes li").first
    expect(dismissed).to_contain_text("Dismissed: delete_record dismiss-db in session page-dismiss")
    expect(dismissed).to_contain_text("it still waits for others")
    expect(card(page, "page-dismiss")).to_have_count(0)
    refreshed(page, 2)
    expect(card(page, "page-dismiss")).to_have_count(0)
    dismissed.get_by_role("button", name="Undo dismissing delete_record dismiss-db in session page-dismiss").click()
    expect(card(page, "page-dismiss")).to_have_count(1)
    screenshot(page, "inbox-dismissed")


def test_the_card_opens_the_conversation_that_led_to_the_question(own_url: str, page: Any) -> None:
    start(own_url, "page-talk", "talk-db")
    status, _ = call(own_url, "POST", "/sessions/page-rtl/turns", {"prompt": "delete the test\u202egpj.exe-db record"})
    assert status == 201
    page.goto(f"{own_url}/inbox?refresh=0")
    # A right-to-left override in what a question says is shown, never obeyed (it would reorder the text).
    expect(card(page, "page-rtl").locator(".prompt")).to_have_text("delete the test\\u202egpj.exe-db record")
    asked = card(page, "page-talk")
    expect(asked.locator(".messages li")).to_have_count(0)  # (read only when opened)
    asked.get_by_text("The conversation so far").click()
    said = asked.locator(".messages li")
    expect(said).to_have_count(2)
    expect(asked.locator(".conversation-status")).to_have_text("2 messages from db_admin.")
    expect(said.nth(0)).to_have_text("userdelete talk-db")
    expect(said.nth(1)).to_contain_text("You asked me to delete the record talk-db; delete_record does that.")
    expect(said.nth(1)).to_contain_text('calls delete_record {"name":"talk-db"}')
    screenshot(page, "inbox-conversation")


def test_a_link_to_one_question_lands_on_it_focused_and_one_no_longer_waiting_says_so(own_url: str, page: Any) -> None:
    start(own_url, "page-link-1", "link-1-db")
    linked = start(own_url, "page-link-2", "link-2-db")["interactions"][0]["requestId"]
    page.goto(f"{own_url}/inbox?refresh=0#q-{linked}")  # (what the e-mail's inboxUrl says)
    target = card(page, "page-link-2")
    expect(target).to_have_class(re.compile(r"\blinked\b"))
    expect(target.locator("article")).to_be_focused()
    expect(page.locator("#outcomes li")).to_have_count(0)  # (opening it decided nothing)
    expect(card(page, "page-link-1")).not_to_have_class(re.compile(r"\blinked\b"))
    screenshot(page, "inbox-linked")

    page.goto("about:blank")  # (a new load: changing only the fragment would not read the list again)
    page.goto(f"{own_url}/inbox?refresh=0#q-r0000000000000000000000000")
    expect(page.locator("#notice")).to_contain_text("is not waiting for you")
    expect(card(page, "page-link-2")).to_have_count(1)
    page.goto("about:blank")  # (a page that polls says so too, and keeps saying it through its refreshes)
    page.goto(f"{own_url}/inbox?refresh=1#q-r0000000000000000000000001")
    expect(page.locator("#notice")).to_contain_text("is not waiting for you")
    seen = int(page.locator("body").get_attribute("data-refreshes") or 0)
    expect(page.locator("body")).to_have_attribute("data-refreshes", str(seen + 2))
    expect(page.locator("#notice")).to_contain_text("is not waiting for you")

    # The list is an index, which shows a question a moment after it is asked (the embedded AWS's lag:
    # 2 requests, and this reader's inbox is 1 Query): a link opened at once still lands on it.
    page.goto("about:blank")
    with lagging(2, least=2):
        fresh = start(own_url, "page-link-3", "link-3-db")["interactions"][0]["requestId"]
        page.goto(f"{own_url}/inbox?refresh=0#q-{fresh}")
        expect(card(page, "page-link-3")).to_have_class(re.compile(r"\blinked\b"))
        expect(page.locator("#notice")).not_to_contain_text("is not waiting for you")
