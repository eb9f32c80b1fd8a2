"""Answering from Slack: a request Slack signed is read into a click (one too old, or signed with
another secret, is refused and nothing is answered); the click answers through the same use case as
the API, exactly once, as the principal the Slack user maps to (an unmapped user answers nothing);
Deny and Edit open their modals, whose submissions deny with a message and approve with an edit; a
click after the question settled, and the second of two at once, are told it was not recorded."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import pytest

from resumable.runtime.rules import parse_rules
from resumable.service import Service, TurnView
from resumable.slack import messages
from resumable.slack.answers import UNMAPPED, Reply, answer
from resumable.slack.messages import APPROVE, DENY, DENY_MODAL, EDIT, EDIT_MODAL, Asked
from resumable.slack.people import LookupFailedError, People
from resumable.slack.requests import (
    HANDED_ON_MAX_AGE_SECONDS,
    Click,
    SlackRequest,
    SlackRequestError,
    read,
    read_handed_on,
)
from tests.clock import FakeClock
from tests.factories import executions
from tests.slack import CHANNEL, SIGNING_SECRET, USER, button, signed, signed_body, submitted

ANN = "arn:aws:iam::000000000000:user/approver-ann"
BEN = "arn:aws:iam::000000000000:user/approver-ben"
PEOPLE = People({"U0ANN": ANN, "ben@example.com": BEN}, {"T0TEAM"}, email_of={"U0BEN": "Ben@Example.com"}.get)
BEN_IN_SLACK = {"id": "U0BEN", "username": "ben", "team_id": "T0TEAM"}


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service("nested_editable", approver_principals=(ANN, BEN))


def _asked(turn: TurnView) -> Asked:
    [question] = turn.interactions
    return Asked(session_id=turn.session_id, turn_id=turn.turn_id, request_id=question.request_id)


def _click(payload: dict[str, object]) -> Click:
    body, headers = signed(payload)
    return read(body, headers, SIGNING_SECRET)


def test_a_signed_approve_click_approves_once_as_the_mapped_principal(
    service: Service, session_id: str, ledger: Path
) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    click = _click(button(APPROVE, asked))
    assert (click.kind, click.asked, click.user_id, click.channel_id) == ("approve", asked, "U0ANN", "C0APPROVALS")
    reply = answer(service, click, PEOPLE)
    assert reply == Reply(text="You approved it. The turn is completed.")
    [question] = service.get_turn(session_id, asked.turn_id).interactions
    assert question.answered_by == ANN
    again = answer(service, click, PEOPLE)  # Slack retries a request it thinks was lost
    assert again.text is not None and again.text.startswith("You approved it")
    assert executions(ledger) == ["delete prod-db"]


def test_a_slack_approval_is_one_of_the_votes_a_two_person_rule_counts(
    make_service: Callable[..., Service], session_id: str, ledger: Path
) -> None:
    rule = parse_rules([{"tools": ["delete_record"], "required": 2}])
    service = make_service("nested_editable", approver_principals=(ANN, BEN), approval_rules=rule)
    asked = _asked(service.start_turn(session_id, "delete", "arn:aws:iam::000000000000:user/owner"))
    first = answer(service, _click(button(APPROVE, asked)), PEOPLE)
    assert first.text == "Your approval is recorded: 1 of 2. It waits for 1 more."
    assert executions(ledger) == []
    ben = {"id": "U0BEN", "username": "ben", "team_id": "T0TEAM"}
    assert (
        answer(service, _click(button(APPROVE, asked, ben)), PEOPLE).text == "You approved it. The turn is completed."
    )
    [question] = service.get_turn(session_id, asked.turn_id).interactions
    assert [v.by for v in question.approvals] == [ANN, BEN]
    assert executions(ledger) == ["delete prod-db"]
    again = answer(service, _click(button(APPROVE, asked)), PEOPLE)  # ann, once it is settled
    assert again.text == "Your approval counted: the question is answered. The turn is completed."


def test_deny_opens_a_modal_whose_submission_denies_with_the_message(service: Service, session_id: str) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    opened = answer(service, _click(button(DENY, asked)), PEOPLE)
    assert opened.modal is not None and opened.modal["callback_id"] == DENY_MODAL
    assert service.get_turn(session_id, asked.turn_id).status == "waiting", "opening the modal decides nothing"
    submission = _click(submitted(DENY_MODAL, asked, "  not on a Friday "))
    assert submission.channel_id == CHANNEL, "a submission names no channel: the modal carries the message's"
    reply = answer(service, submission, PEOPLE)
    assert reply.text == "You denied it. The turn is completed."
    [question] = service.get_turn(session_id, asked.turn_id).interactions
    assert question.response == {"decision": "deny", "message": "not on a Friday"}


def test_edit_opens_the_input_and_its_submission_approves_the_edit_or_refuses_what_is_not_json(
    service: Service, session_id: str, ledger: Path
) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    opened = answer(service, _click(button(EDIT, asked)), PEOPLE)
    assert opened.modal is not None and opened.modal["callback_id"] == EDIT_MODAL
    assert '"prod-db"' in opened.modal["blocks"][0]["element"]["initial_value"]
    refused = answer(service, _click(submitted(EDIT_MODAL, asked, '{"name": ')), PEOPLE)
    assert refused.errors is not None and "Not JSON" in refused.errors[messages.INPUT_FIELD]
    unfit = answer(service, _click(submitted(EDIT_MODAL, asked, '{"name": 5}')), PEOPLE)
    assert unfit.errors is not None and "is not of type 'string'" in unfit.errors[messages.INPUT_FIELD]
    reply = answer(service, _click(submitted(EDIT_MODAL, asked, '{"name": "prod-db-replica"}')), PEOPLE)
    assert reply.text == "You approved it with your edits. The turn is completed."
    assert executions(ledger) == ["delete prod-db-replica"]


def test_a_user_found_by_the_email_slack_holds_answers_and_an_unmapped_one_records_nothing(
    service: Service, session_id: str
) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    stranger = {"id": "U0EVE", "username": "eve", "team_id": "T0TEAM"}
    assert answer(service, _click(button(APPROVE, asked, stranger)), PEOPLE) == Reply(text=UNMAPPED)
    assert answer(service, _click(button(DENY, asked, stranger)), PEOPLE) == Reply(text=UNMAPPED)
    assert service.get_turn(session_id, asked.turn_id).status == "waiting"
    ben = {"id": "U0BEN", "username": "ben", "team_id": "T0TEAM"}
    assert (
        answer(service, _click(button(APPROVE, asked, ben)), PEOPLE).text == "You approved it. The turn is completed."
    )
    [question] = service.get_turn(session_id, asked.turn_id).interactions
    assert question.answered_by == BEN


def test_a_click_after_the_question_settled_is_told_it_was_not_recorded(service: Service, session_id: str) -> None:
    started = service.start_turn(session_id, "delete")
    asked = _asked(started)
    service.submit_approval(session_id, asked.turn_id, asked.request_id, {"decision": "deny"}, BEN)
    reply = answer(service, _click(button(APPROVE, asked)), PEOPLE)
    assert reply.text is not None and reply.text.startswith("Not recorded: "), reply.text
    assert service.get_turn(session_id, asked.turn_id).interactions[0].response == {"decision": "deny"}
    edit = answer(service, _click(button(EDIT, asked)), PEOPLE)
    assert edit.text is not None and edit.text.startswith("Nothing to answer"), edit.text


def test_two_clicks_at_once_settle_it_once(
    make_service: Callable[..., Service], service: Service, session_id: str, ledger: Path
) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    services = [make_service("nested_editable", approver_principals=(ANN, BEN)) for _ in range(2)]
    clicks = [
        _click(button(APPROVE, asked)),
        _click(button(APPROVE, asked, {"id": "U0BEN", "username": "ben", "team_id": "T0TEAM"})),
    ]
    barrier = threading.Barrier(2)
    replies: list[str | None] = [None, None]

    def click(n: int) -> None:
        barrier.wait()
        replies[n] = answer(services[n], clicks[n], PEOPLE).text

    threads = [threading.Thread(target=click, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r is not None and r.startswith("You approved it") for r in replies) == [False, True], replies
    [told_no] = [r for r in replies if r is not None and r.startswith("Not recorded: ")]
    [question] = service.get_turn(session_id, asked.turn_id).interactions
    assert f"{question.answered_by} gave the same answer first" in told_no
    assert executions(ledger) == ["delete prod-db"]


@pytest.mark.parametrize(
    ("signing", "refused"),
    [
        ({"ago": 6 * 60}, "refused as a replay"),
        ({"ago": -6 * 60}, "in the future"),
        ({"secret": "another-apps-secret"}, "signature does not match"),
    ],
    ids=["six minutes old", "six minutes ahead", "another secret"],
)
def test_a_replayed_or_forged_request_is_refused_and_answers_nothing(
    service: Service, session_id: str, signing: dict[str, object], refused: str
) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    ago = float(signing.get("ago", 0))  # type: ignore[arg-type]
    secret = str(signing.get("secret", SIGNING_SECRET))
    body, headers = signed(
        button(APPROVE, asked), at=time.time() - ago, secret=secret
    )  # (signed now, not when collected)
    with pytest.raises(SlackRequestError, match=refused) as caught:
        read(body, headers, SIGNING_SECRET)
    assert caught.value.status == 401
    tampered_body, tampered = signed(button(APPROVE, asked))
    with pytest.raises(SlackRequestError, match="signature does not match"):
        read(tampered_body.replace("U0ANN", "U0BEN"), tampered, SIGNING_SECRET)
    with pytest.raises(SlackRequestError, match="no Slack signature"):
        read(body, {}, SIGNING_SECRET)
    assert service.get_turn(session_id, asked.turn_id).status == "waiting"


def test_what_is_not_a_click_of_this_app_is_refused_with_what_was_wrong() -> None:
    asked = Asked(session_id="s", turn_id="t", request_id="r")
    for payload, said in [
        ({**button("someone_elses_button", asked)}, "not one of this app's"),
        ({"type": "shortcut", "user": USER}, "not one this app reads"),
        ({**button(APPROVE, asked), "actions": [{"action_id": APPROVE, "value": "{not json"}]}, "not a click"),
    ]:
        body, headers = signed(payload)
        with pytest.raises(SlackRequestError, match=said) as caught:
            read(body, headers, SIGNING_SECRET)
        assert caught.value.status == 400
    body, headers = signed_body("token=x")
    with pytest.raises(SlackRequestError, match="no interactivity payload"):
        read(body, headers, SIGNING_SECRET)
    nested = "[" * 5000 + "]" * 5000
    for payload in [nested, '{"type": "block_actions", "user": "U0ANN", "actions": []}']:
        body, headers = signed_body(urlencode({"payload": payload}))
        with pytest.raises(SlackRequestError) as caught:
            read(body, headers, SIGNING_SECRET)
        assert caught.value.status == 400


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({"X-Slack-Request-Timestamp": "9" * 400, "X-Slack-Signature": "v0=00"}, "not a time in seconds"),
        ({"X-Slack-Request-Timestamp": "1.5e9", "X-Slack-Signature": "v0=00"}, "not a time in seconds"),
        ({"X-Slack-Request-Timestamp": "-60", "X-Slack-Signature": "v0=00"}, "not a time in seconds"),
        ({"X-Slack-Request-Timestamp": "NOW", "X-Slack-Signature": "v0=00"}, "not a time in seconds"),
        ({"X-Slack-Signature": "v0=ü"}, "not one Slack makes"),
    ],
    ids=["400 digits", "a float", "negative", "a word", "not ASCII"],
)
def test_hostile_headers_are_refused_before_anything_is_read(headers: dict[str, str], said: str) -> None:
    body, signed_headers = signed(button(APPROVE, Asked(session_id="s", turn_id="t", request_id="r")))
    with pytest.raises(SlackRequestError, match=said) as caught:
        read(body, signed_headers | headers, SIGNING_SECRET)
    assert caught.value.status == 401


def test_lowercase_headers_and_a_body_in_bytes_are_read_as_slack_sent_them() -> None:
    asked = Asked(session_id="s", turn_id="t", request_id="r")
    body, headers = signed(button(APPROVE, asked))
    click = read(body.encode(), {k.lower(): v for k, v in headers.items()}, SIGNING_SECRET)
    assert click.asked == asked


def test_a_request_handed_on_is_read_again_as_slack_signed_it_within_the_hour_lambda_retries_it() -> None:
    asked = Asked(session_id="s", turn_id="t", request_id="r")
    now = time.time()
    body, headers = signed(button(APPROVE, asked), at=now - 3000)  # (the hand-on retried, late in the hour)
    handed = SlackRequest.of(body, headers)
    assert read_handed_on(handed, SIGNING_SECRET, now).asked == asked
    with pytest.raises(SlackRequestError, match="refused as a replay"):  # (at Slack's door it is too old)
        read(body, headers, SIGNING_SECRET, now)
    old = SlackRequest.of(*signed(button(APPROVE, asked), at=now - HANDED_ON_MAX_AGE_SECONDS - 1))
    with pytest.raises(SlackRequestError, match="refused as a replay"):
        read_handed_on(old, SIGNING_SECRET, now)
    written = base64.b64encode(body.replace("U0ANN", "U0BEN").encode()).decode()  # (a click someone wrote)
    for refused, said in [
        (handed.model_copy(update={"body": written}), "signature does not match"),
        (handed.model_copy(update={"body": "not base64!"}), "not base64"),
        (SlackRequest.of(*signed(button(APPROVE, asked), secret="another-apps-secret")), "signature does not match"),
    ]:
        with pytest.raises(SlackRequestError, match=said):
            read_handed_on(refused, SIGNING_SECRET, now)


def test_a_body_that_is_not_utf8_is_refused_as_such_before_its_signature_is_checked() -> None:
    headers = {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=" + "0" * 64}
    with pytest.raises(SlackRequestError, match="not UTF-8") as caught:  # (not an error of the function's)
        read(b"payload=\xff", headers, SIGNING_SECRET)
    assert caught.value.status == 400


def test_another_workspaces_user_and_one_slack_cannot_look_up_answer_nothing(service: Service, session_id: str) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    outsider = {**USER, "team_id": "T0OTHER"}  # the same user id, in another workspace
    assert answer(service, _click(button(APPROVE, asked, outsider)), PEOPLE) == Reply(text=UNMAPPED)

    def failing(_: str) -> str | None:
        raise LookupFailedError("users.info: ratelimited")

    flaky = People({"ben@example.com": BEN}, {"T0TEAM"}, email_of=failing)
    told = answer(service, _click(button(APPROVE, asked, BEN_IN_SLACK)), flaky)
    assert told.text is not None and "could not say who you are" in told.text and "ratelimited" in told.text
    assert service.get_turn(session_id, asked.turn_id).status == "waiting"


def test_a_refusal_quoting_anothers_words_is_escaped_for_slack(service: Service, session_id: str) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    denial = {"decision": "deny", "message": "<https://evil.example|press to re-approve> <!channel>"}
    service.submit_approval(session_id, asked.turn_id, asked.request_id, denial, BEN)
    reply = answer(service, _click(button(APPROVE, asked)), PEOPLE)
    assert reply.text is not None and reply.text.startswith("Not recorded: ")
    assert "<" not in reply.text and "&lt;https://evil.example" in reply.text and "&lt;!channel&gt;" in reply.text
    opened = answer(service, _click(button(DENY, asked)), PEOPLE)
    assert opened.text is not None and opened.text.startswith("Nothing to answer"), "no modal for a settled question"


def test_an_expired_question_is_too_late_and_a_rule_that_names_others_is_not_yours(
    make_service: Callable[..., Service], session_id: str, clock: FakeClock
) -> None:
    rule = parse_rules([{"tools": ["delete_record"], "approvers": [BEN], "required": 1}])
    service = make_service("nested_editable", approver_principals=(ANN, BEN), approval_rules=rule)
    asked = _asked(service.start_turn(session_id, "delete", "arn:aws:iam::000000000000:user/owner"))
    refused = answer(service, _click(button(APPROVE, asked)), PEOPLE)
    assert refused.text is not None and refused.text.startswith("Not yours to answer: "), refused.text
    clock.advance(service.settings.approval_expiry_seconds + 1)
    late = answer(service, _click(button(APPROVE, asked, BEN_IN_SLACK)), PEOPLE)
    assert late.text is not None and late.text.startswith(("Too late: ", "Not recorded: ")), late.text
    assert "expired" in late.text


def test_an_edit_nested_too_deep_is_refused_in_the_modal_and_an_input_that_may_not_be_edited_opens_none(
    make_service: Callable[..., Service], service: Service, session_id: str
) -> None:
    asked = _asked(service.start_turn(session_id, "delete"))
    deep = answer(service, _click(submitted(EDIT_MODAL, asked, "[" * 1500 + "]" * 1500)), PEOPLE)
    assert deep.errors is not None and "nothing was approved" in deep.errors[messages.INPUT_FIELD]
    plain = make_service("nested", approver_principals=(ANN, BEN))
    other = _asked(plain.start_turn(session_id + "-b", "delete"))
    told = answer(plain, _click(button(EDIT, other)), PEOPLE)
    assert told.text == "This question's input may not be edited: approve or deny it as asked."
