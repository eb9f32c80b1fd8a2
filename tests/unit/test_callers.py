"""Who called, as the HTTP edge reads it: an IAM principal, or a sign-in token's subject with the
groups the token itself names (which may make it an approver)."""

from __future__ import annotations

import base64
import json

import pytest

from resumable.api.routes import token_groups
from resumable.config import Settings
from resumable.service.access import is_approver
from resumable.service.caller import Caller
from resumable.slack.people import People

CLAIM = "cognito:groups"


def bearer(payload: object) -> str:
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"Bearer {part({'alg': 'RS256'})}.{part(payload)}.signature"


@pytest.mark.parametrize(
    ("groups", "read"),
    [
        (["approvers", "admins"], ("approvers", "admins")),
        (["Backup approvers"], ("Backup approvers",)),  # one group with a space: never two
        (["readers,approvers"], ("readers,approvers",)),
        ("approvers", ("approvers",)),
        ([], ()),
        ([7], ()),
        ({"approvers": True}, ()),
    ],
)
def test_groups_are_read_whole_from_the_token(groups: object, read: tuple[str, ...]) -> None:
    assert token_groups(bearer({"sub": "dave", CLAIM: groups}), "dave", CLAIM) == read


def test_no_groups_from_a_token_for_someone_else_or_no_token() -> None:
    assert token_groups(bearer({"sub": "erin", CLAIM: ["approvers"]}), "dave", CLAIM) == ()
    assert token_groups(None, "dave", CLAIM) == ()
    assert token_groups("Bearer not-a-jwt", "dave", CLAIM) == ()
    assert token_groups("Bearer a.%%%.c", "dave", CLAIM) == ()


def test_an_approver_by_group_or_by_principal_and_nobody_else() -> None:
    settings = Settings(approver_principals=("arn:aws:iam::1:user/ann",), approver_groups=("approvers",))
    assert is_approver(settings, Caller("dave", frozenset({"approvers"})))
    assert is_approver(settings, "arn:aws:iam::1:user/ann")  # (a bare principal: a caller of it alone)
    assert not is_approver(settings, Caller("erin", frozenset({"Backup approvers"})))
    assert not is_approver(settings, Caller("approvers"))  # a subject named like a group is not in it


def test_a_caller_is_frozen_and_stored_as_its_identity_alone() -> None:
    dave = Caller("dave", ("approvers",), {"method": "jwt", "subject": "dave"}, " Dave\n Example ", via="cli")  # type: ignore[arg-type]
    assert dave.groups == frozenset({"approvers"}) and str(dave) == dave.identity == "dave"
    assert (dave.shown_name, dave.channel) == ("Dave Example", "cli")  # (one line: never two rows of a listing)
    assert Caller("dave", via="smoke-signal").channel == "api"  # a channel nobody knows is the API's
    assert Caller.of("dave") == Caller("dave") and Caller.of(dave) is dave and Caller.of(None) is None
    assert dave == "dave" and dave != Caller("dave") and {"dave": 1}[dave] == 1  # compared as records keep it
    with pytest.raises(AttributeError):
        dave.identity = "mallory"  # type: ignore[misc]
    with pytest.raises(ValueError, match="non-empty string"):
        Caller("")


def test_a_slack_user_mapped_to_nobody_answers_as_nobody() -> None:
    people = People({"U0ANN": "", "U0BEN": "arn:aws:iam::1:user/ben"}, {"T0TEAM"})
    assert people.caller("U0ANN", "T0TEAM") is None  # (told they are not mapped; never the application)
    ben = people.caller("U0BEN", "T0TEAM", "Ben")
    assert ben is not None and (ben.identity, ben.channel) == ("arn:aws:iam::1:user/ben", "slack")
