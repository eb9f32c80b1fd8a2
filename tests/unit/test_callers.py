"""Who called, as the HTTP edge reads it from API Gateway's authorizer: an IAM principal, or a sign-in
token's subject with its groups (which may make it an approver)."""

from __future__ import annotations

import pytest

from resumable.api.routes import token_groups
from resumable.config import Settings
from resumable.service.access import Principal, is_approver


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        ("[approvers admins]", ("approvers", "admins")),  # how API Gateway hands on an array claim
        ('["approvers", "admins"]', ("approvers", "admins")),
        (["approvers"], ("approvers",)),
        ("approvers", ("approvers",)),
        ("", ()),
        (None, ()),
        (7, ()),
    ],
)
def test_a_groups_claim_in_every_shape_api_gateway_hands_on(claim: object, groups: tuple[str, ...]) -> None:
    assert token_groups(claim) == groups


def test_an_approver_by_group_or_by_principal_and_nobody_else() -> None:
    settings = Settings(approver_principals=("arn:aws:iam::1:user/ann",), approver_groups=("approvers",))
    assert is_approver(settings, Principal("dave", ("approvers",)))
    assert is_approver(settings, "arn:aws:iam::1:user/ann")
    assert not is_approver(settings, Principal("erin", ("admins",)))
    assert not is_approver(settings, "approvers")  # a subject named like a group is not in it
    assert Principal("dave", ("approvers",)) == "dave"  # stored and compared as the identity alone
