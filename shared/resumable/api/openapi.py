"""The OpenAPI document of the HTTP API: every status each route answers, in the shapes it really sends.

Powertools generates the document from the routes and their pydantic models; this module declares
what the routes answer (``responses``) and completes what the generator cannot know: the ids'
alphabet, IAM (SigV4) authorization, and that nothing answers Powertools' default validation shape.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from pydantic import BaseModel, ConfigDict

from resumable.api.errors import ErrorBody

TITLE = "resumable"
VERSION = "1"
DESCRIPTION = (
    "Human-approved AI agents on serverless AWS. Start a turn in a session; when an agent needs a "
    "person's decision the turn waits with interactions to answer; an answer resumes it. Requests are "
    "signed with SigV4 (IAM authorization); a session belongs to the principal that started it, and "
    "another principal gets 404 for it unless it is an approver. Every error is {code, message}, and "
    "a refused request writes nothing."
)


class GatewayRefusal(BaseModel):
    """API Gateway's own reply when IAM authorization refuses a request (before any function runs); or
    resumable's, ``forbidden``, when an operator's route (/admin/...) is called by one who is not an
    approver, or an answer by one its question's approval rule does not let answer."""

    model_config = ConfigDict(defer_build=True)
    code: str | None = None
    message: str


# What each error status means, on every route that can answer it.
ERRORS: dict[int, str] = {
    400: "bad_request: the body is not a JSON object (not JSON, or JSON that is not an object); nothing was done",
    404: "not_found: no such session, turn or interaction, or another principal's (they look the same)",
    409: "conflict (answered differently before, the message names the answer that stands; or, under an approval "
    "rule, approved by the caller already or with another input) or turn_busy",
    410: "gone: the interaction is no longer live (canceled, superseded or expired)",
    422: "validation_failed: a JSON object of the wrong shape, too large, too deep, or text UTF-8 cannot hold; "
    "a query parameter the route does not take, or one out of its range",
    500: "aws_failed: an AWS call failed; what was written before it stands and the turn is resumable: retry",
}
FORBIDDEN = (
    "API Gateway refused the request's SigV4 signature or IAM denied it (no function ran); or, on /admin/... and "
    "/audit, forbidden: the caller is not an approver; or, answering, forbidden: the question's approval rule does not "
    "let the caller answer it (the message names the rule); or, revoking a grant, forbidden: the caller neither "
    "gave it nor approves"
)

# The path parameters' alphabets (resumable.service.ids): an id outside them is simply not found.
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "sessionId": {
        "type": "string",
        "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        "minLength": 1,
        "maxLength": 128,
        "description": "Chosen by the client when it starts the session's first turn; percent-decoded.",
    },
    "turnId": {
        "type": "string",
        "pattern": "^[0-9a-f]{32}(~[0-9a-f]{16})?$",
        "description": "A root turn (32 hex digits) or a child turn of it (the root's id, ~, 16 hex digits).",
    },
    "requestId": {
        "type": "string",
        "pattern": "^r[0-9a-f]{24}$",
        "description": "An interaction's id, as the Turn lists it.",
    },
    "grantId": {
        "type": "string",
        "pattern": "^g[0-9a-f]{24}$",
        "description": "A standing grant's id, as GET /grants lists it.",
    },
}

UNAUTHORIZED = (
    "API Gateway refused the request: with AuthMode JWT, no sign-in token, or one that is expired, not from "
    "JwtIssuer or not for JwtAudience (no function ran)"
)

SIGN_IN_SCHEME = {
    "signIn": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "AuthMode JWT: a sign-in token from JwtIssuer for JwtAudience (Authorization: Bearer <token>).",
    }
}

SECURITY_SCHEME = {
    "sigv4": {
        "type": "apiKey",
        "name": "Authorization",
        "in": "header",
        "description": "AWS Signature Version 4 (IAM authorization): sign every request for the execute-api service.",
        "x-amazon-apigateway-authtype": "awsSigv4",
    }
}


def responses(status: int, description: str, model: type[BaseModel], *errors: int) -> dict[int, Any]:
    """A route's ``responses``: its success, the errors it can answer, and API Gateway's 401 and 403."""
    table: dict[int, Any] = {status: {"description": description, "content": {"application/json": {"model": model}}}}
    table[401] = {"description": UNAUTHORIZED, "content": {"application/json": {"model": GatewayRefusal}}}
    table[403] = {"description": FORBIDDEN, "content": {"application/json": {"model": GatewayRefusal}}}
    for error in sorted({*errors, 422, 500}):  # (every route refuses a query parameter it does not take: 422)
        table[error] = {"description": ERRORS[error], "content": {"application/json": {"model": ErrorBody}}}
    return table


def document(app: APIGatewayHttpResolver, signed_in: bool = False) -> dict[str, Any]:
    """The OpenAPI document of ``app``'s routes, authorized by SigV4 (AuthMode IAM) or, ``signed_in``,
    by a sign-in token (AuthMode JWT)."""
    scheme = SIGN_IN_SCHEME if signed_in else SECURITY_SCHEME
    sigv4 = "are signed with SigV4 (IAM authorization)"
    signed = "carry a sign-in token (AuthMode JWT: Authorization: Bearer <token>)" if signed_in else sigv4
    generated: dict[str, Any] = json.loads(
        app.get_openapi_json_schema(
            title=TITLE,
            version=VERSION,
            description=DESCRIPTION.replace(sigv4, signed, 1),
            security_schemes=scheme,  # type: ignore[arg-type]
            security=[{name: []} for name in scheme],
        )
    )
    for operations in generated["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] in PATH_PARAMETERS:
                    parameter["schema"] = PATH_PARAMETERS[parameter["name"]]
            # Powertools declares its own 422 shape on every route, which nothing here sends: a route
            # that can answer 422 declares ErrorBody for it.
            if _POWERTOOLS_422 in json.dumps(operation["responses"].get("422", {})):
                del operation["responses"]["422"]
    schemas = generated.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ResponseValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return generated


_POWERTOOLS_422 = "#/components/schemas/HTTPValidationError"
