"""The HTTP API's routes of standing grants (docs/approval-rules.md#standing-grants): an approval gives
one (``POST .../interactions/{requestId}`` with ``grant``); these list and revoke them.

| route | reply |
|---|---|
| ``GET /grants[?status=live|all]`` | 200 ``{"grants": [...]}``: those you may see, oldest first |
| ``DELETE /grants/{grantId}`` | 200 the grant, revoked (its grantor or an approver; 403, 404) |
"""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from resumable.api.openapi import responses
from resumable.api.routes import caller, json_reply, path_param, service
from resumable.service.grants.managing import GrantList, GrantView

grant_router = APIGatewayHttpRouter()


@grant_router.get(
    "/grants",
    operation_id="listGrants",
    summary="Standing grants: the tools whose calls run without a question, where and until when (an approver "
    "sees all; anyone else, those of their sessions and those they gave)",
    responses=responses(200, "The grants, oldest first", GrantList, 422),
)
def list_grants(
    status: Annotated[
        Literal["live", "all"],
        Query(description="live (the default): only those in force; all: also those revoked or expired."),
    ] = "live",
) -> Response[GrantList]:
    return json_reply(service().grants(caller(), status))


@grant_router.delete(
    "/grants/<grantId>",
    operation_id="revokeGrant",
    summary="Revoke a standing grant now (its grantor or an approver): every call whose journal entry begins "
    "after this commits asks a person again",
    responses=responses(200, "The grant, revoked", GrantView, 404),
)
def revoke_grant(grantId: str) -> Response[GrantView]:  # noqa: N803
    return json_reply(service().revoke_grant(path_param("grantId", grantId), caller()))
