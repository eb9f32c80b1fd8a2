"""The HTTP API's routes for approvers and operators: the audit trail, and the operator's moves
(``resumable admin``; docs/runbook.md). Every one is approvers only: 403 for anyone else.

| route | reply |
|---|---|
| ``GET /audit[?since=&until=&principal=&tool=&outcome=&limit=&cursor=]`` | 200 ``{"records", "cursor"}`` |
| ``GET /audit/verify[?since=&until=]`` | 200 the delivered trail of those hours, checked |
| ``GET /admin/stuck[?limit=N]`` | 200 ``{"turns": [...]}``: stuck and stalled turns |
| ``GET /admin/sessions/{sessionId}/turns/{turnId}`` | 200 the turn's records |
| ``POST /admin/sessions/{sessionId}/turns/{turnId}/recover`` | 200 Turn |
| ``POST /admin/sessions/{sessionId}/republish`` | 200 ``{"sessionId", "republished"}`` |
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from resumable.api.openapi import responses
from resumable.api.routes import caller, json_reply, path_param, service
from resumable.service import TurnView
from resumable.service.audit.trail import DEFAULT_PAGE as DEFAULT_AUDIT_PAGE
from resumable.service.audit.trail import MAX_PAGE as MAX_AUDIT_PAGE
from resumable.service.audit.trail import AuditPage
from resumable.service.audit.verification import MAX_HOURS, TrailCheck
from resumable.service.cursor import MAX_CURSOR_CHARS
from resumable.service.operating.admin import MAX_STALLED, Republished, StalledTurns, TurnRecords
from resumable.store.records import AuditOutcome

operator_router = APIGatewayHttpRouter()


@operator_router.get(
    "/audit",
    operation_id="listAudit",
    summary="The audit trail: every vote, decision and approved action's outcome, oldest first (approvers only)",
    responses=responses(200, "A page of the audit trail, and the cursor of the next", AuditPage, 422),
)
def list_audit(
    since: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=64,
            description="From this ISO 8601 date or time (UTC unless it says); default 7 days ago.",
        ),
    ] = None,
    until: Annotated[
        str | None, Query(min_length=1, max_length=64, description="Before this ISO 8601 date or time; default now.")
    ] = None,
    principal_: Annotated[
        str | None,
        Query(alias="principal", min_length=1, max_length=2048, description="Only entries it answered, or voted in."),
    ] = None,
    tool: Annotated[
        str | None,
        Query(min_length=1, max_length=256, description="Only entries of tools matching this ('*' wildcards)."),
    ] = None,
    outcome: Annotated[AuditOutcome | None, Query(description="Only entries with this outcome.")] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_AUDIT_PAGE, description=f"At most this many (1 to {MAX_AUDIT_PAGE}).")
    ] = DEFAULT_AUDIT_PAGE,
    cursor: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_CURSOR_CHARS,
            description="The previous page's cursor, as it came, with the same query.",
        ),
    ] = None,
) -> Response[AuditPage]:
    page = service().audit(
        caller(), since=since, until=until, by=principal_, tool=tool, outcome=outcome, limit=limit, after=cursor
    )
    return json_reply(page)


# -- the operator's routes (resumable admin; docs/runbook.md): approvers only, 403 for anyone else ----------


@operator_router.get(
    "/audit/verify",
    operation_id="verifyAudit",
    summary="The delivered audit trail checked against its signed, chained digests, and the table's records "
    "against what was delivered (approvers only)",
    responses=responses(200, "What was checked, and each record changed, deleted or inserted", TrailCheck, 422),
)
def verify_audit(
    since: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=64,
            description=f"From the hour this ISO 8601 date or time falls in; default {MAX_HOURS} hours before until.",
        ),
    ] = None,
    until: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=64,
            description=f"To the end of the hour this ISO 8601 date or time falls in (at most {MAX_HOURS} hours "
            "after since); default now.",
        ),
    ] = None,
) -> Response[TrailCheck]:
    return json_reply(service().verify_audit(since, until, caller()))


@operator_router.get(
    "/admin/stuck",
    operation_id="listStalledTurns",
    summary="Turns the sweeper gave up on, and turns stalled now (approvers only)",
    responses=responses(200, "The stuck turns, then the stalled ones", StalledTurns, 422),
)
def list_stalled(
    limit: Annotated[
        int, Query(ge=1, le=MAX_STALLED, description=f"At most this many of each (1 to {MAX_STALLED}).")
    ] = MAX_STALLED,
) -> Response[StalledTurns]:
    return json_reply(service().stalled(caller(), limit))


@operator_router.get(
    "/admin/sessions/<sessionId>/turns/<turnId>",
    operation_id="inspectTurn",
    summary="A turn's records as stored: turns, interactions, journal, outbox, snapshots (approvers only)",
    responses=responses(200, "The turn tree's records", TurnRecords, 404),
)
def inspect_turn(sessionId: str, turnId: str) -> Response[TurnRecords]:  # noqa: N803
    return json_reply(service().inspect(path_param("sessionId", sessionId), path_param("turnId", turnId), caller()))


@operator_router.post(
    "/admin/sessions/<sessionId>/turns/<turnId>/recover",
    operation_id="recoverTurn",
    summary="Move a turn on now, as the sweeper would (approvers only); safe at any time",
    responses=responses(200, "The Turn as it then is", TurnView, 404),
)
def recover_turn(sessionId: str, turnId: str) -> Response[TurnView]:  # noqa: N803
    return json_reply(
        service().recover_turn(path_param("sessionId", sessionId), path_param("turnId", turnId), caller())
    )


@operator_router.post(
    "/admin/sessions/<sessionId>/republish",
    operation_id="republishEvents",
    summary="Give the publisher the session's unpublished events again (approvers only)",
    responses=responses(200, "How many were given again", Republished, 404),
)
def republish(sessionId: str) -> Response[Republished]:  # noqa: N803
    return json_reply(service().republish(path_param("sessionId", sessionId), caller()))
