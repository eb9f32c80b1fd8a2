"""The local Slack stand-in answers slack_sdk's own WebClient as Slack does, for every method
resumable calls: a message posted and updated in place, a note to one person, a modal opened, a
user's e-mail address; and Slack's errors for a wrong token, an unknown message or user."""

from __future__ import annotations

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from resumable.local.slack_standin import slack_stand_in
from resumable.slack.messages import Asked, Opened, deny_modal
from resumable.slack.people import trusted_email

ANN = {"team_id": "T0TEAM", "is_email_confirmed": True, "profile": {"email": "ann@example.com"}}


def test_slack_sdks_client_posts_updates_tells_opens_and_looks_up_as_on_slack() -> None:
    with slack_stand_in(users={"U0ANN": ANN}) as slack:
        client = WebClient(token=slack.token, base_url=slack.url)
        posted = client.chat_postMessage(channel="C0APPROVALS", text="a question", blocks=[{"type": "divider"}])
        assert posted["ok"] and posted["channel"] == "C0APPROVALS"
        client.chat_update(channel="C0APPROVALS", ts=posted["ts"], text="approved by ann", blocks=[])
        [message] = slack.in_channel("C0APPROVALS")
        assert (message.text, message.blocks, message.updates) == ("approved by ann", [], 1)
        client.chat_postEphemeral(channel="C0APPROVALS", user="U0ANN", text="You approved it.")
        assert slack.ephemeral == [("U0ANN", "You approved it.")]
        modal = deny_modal(Opened(asked=Asked(session_id="s", turn_id="t", request_id="r")))
        assert client.views_open(trigger_id="1.2.3", view=modal)["view"]["callback_id"] == modal["callback_id"]
        assert trusted_email(client.users_info(user="U0ANN").data, {"T0TEAM"}) == "ann@example.com"
        assert [method for method, _ in slack.calls] == [
            "chat.postMessage", "chat.update", "chat.postEphemeral", "views.open", "users.info"
        ]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda c: c.chat_update(channel="C0APPROVALS", ts="1.2", text="x"), "message_not_found"),
        (lambda c: c.users_info(user="U0NOBODY"), "user_not_found"),
        (lambda c: WebClient(token="xoxb-wrong", base_url=c.base_url).auth_test(), "invalid_auth"),
    ],
    ids=["unknown message", "unknown user", "wrong token"],
)
def test_what_slack_refuses_the_stand_in_refuses_with_slacks_error(call: object, error: str) -> None:
    with slack_stand_in() as slack:
        client = WebClient(token=slack.token, base_url=slack.url)
        with pytest.raises(SlackApiError) as caught:
            call(client)  # type: ignore[operator]
        assert caught.value.response["error"] == error


@pytest.mark.parametrize(
    "user",
    [
        {**ANN, "team_id": "T0OTHER"},
        {**ANN, "is_email_confirmed": False},
        {**ANN, "deleted": True},
        {**ANN, "is_bot": True},
        {**ANN, "is_stranger": True},
        {**ANN, "profile": {}},
    ],
    ids=["another workspace", "unconfirmed", "deleted", "a bot", "a stranger", "no address"],
)
def test_an_email_address_slack_holds_stands_for_a_person_only_when_slack_vouches_for_it(
    user: dict[str, object],
) -> None:
    with slack_stand_in(users={"U0ANN": user}) as slack:
        reply = WebClient(token=slack.token, base_url=slack.url).users_info(user="U0ANN")
        assert trusted_email(reply.data, {"T0TEAM"}) is None
