"""The OpenAPI document describes the API that exists: it validates as OpenAPI 3.1, and a schema-driven
fuzzer (Schemathesis) against the local server finds no 5xx, no status the document does not declare,
no reply of another content type and none that contradicts its schema; and against the API as people
reach it (AuthMode JWT, a signed-in token), Schemathesis's whole check set passes: a request without
the token is refused, invalid data is rejected and valid data accepted.

Bounded by examples per operation, never by time: a busy machine runs the same cases, only slower.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from openapi_spec_validator import validate
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from resumable.config import Settings
from resumable.local.issuer import LocalIssuer
from tests.e2e.local_api import call, jwt_api

EXAMPLES = 40
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
OPERATIONS = [
    "startTurn",
    "getTurn",
    "getConversation",
    "submitApproval",
    "dismissInteraction",
    "undismissInteraction",
    "cancelTurn",
    "listInteractions",
    "listInbox",
    "getInteraction",
    "listAudit",
    "verifyAudit",
    "deleteSession",
    "restoreSession",
    "listStalledTurns",
    "inspectTurn",
    "recoverTurn",
    "republishEvents",
    "listGrants",
    "revokeGrant",
]


@pytest.fixture(scope="module")
def document(url: str) -> dict[str, Any]:
    status, body = call(url, "GET", "/openapi.json")
    assert status == 200
    assert isinstance(body, dict)
    return body


@pytest.mark.slow
def test_the_document_is_valid_openapi_and_declares_every_route_with_its_errors(document: dict[str, Any]) -> None:
    validate(document)  # raises on anything that is not valid OpenAPI 3.1
    operations = {op["operationId"]: op for path in document["paths"].values() for op in path.values()}
    assert sorted(operations) == sorted(OPERATIONS)
    for operation in operations.values():
        assert operation["summary"]
        declared = set(operation["responses"])
        assert {"401", "403", "500"} <= declared, operation["operationId"]
        # Every route that names a session answers 404 for an unknown one (or another principal's).
        named = str(operation.get("parameters"))  # (a route that names a session or a question may not find it)
        ided = any(name in named for name in ("sessionId", "requestId", "grantId"))
        assert ("404" in declared) == ided, operation["operationId"]
        for status, response in operation["responses"].items():
            schema = response["content"]["application/json"]["schema"]["$ref"]
            if status.startswith(("4", "5")) and status not in ("401", "403"):
                assert schema == "#/components/schemas/ErrorBody", (operation["operationId"], status)
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas, "Powertools' default 422 shape is never sent"
    assert set(schemas["ErrorBody"]["required"]) == {"code", "message"}
    assert schemas["StartTurnBody"]["properties"]["prompt"]["minLength"] == 1
    answer = schemas["AnswerBody"]["properties"]["response"]["anyOf"][0]
    assert answer["properties"]["decision"]["enum"] == ["approve", "deny"]
    assert document["components"]["securitySchemes"]["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    path = document["paths"]["/sessions/{sessionId}/turns/{turnId}/interactions/{requestId}"]["post"]
    patterns = {p["name"]: p["schema"]["pattern"] for p in path["parameters"]}
    assert patterns == {
        "sessionId": "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        "turnId": "^[0-9a-f]{32}(~[0-9a-f]{16})?$",
        "requestId": "^r[0-9a-f]{24}$",
    }


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("operation_id", OPERATIONS)
def test_a_schema_driven_fuzzer_finds_no_undocumented_reply(url: str, operation_id: str, mode: GenerationMode) -> None:
    operation = schemathesis.openapi.from_url(f"{url}/openapi.json").find_operation_by_id(operation_id)
    fuzz(operation, mode, EXAMPLES, lambda case: case.call_and_validate(base_url=url, checks=CHECKS))


def fuzz(operation: Any, mode: GenerationMode, examples: int, send: Callable[[schemathesis.Case], Any]) -> None:
    """``send`` each of ``examples`` cases of ``operation``: the same cases every run (derandomized: a
    run's verdict never rests on which cases chance drew; explore by hand with --hypothesis-seed=N)."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def each(case: schemathesis.Case) -> None:
        send(case)

    each()


@pytest.fixture(scope="module")
def jwt_url(handler_environment: Settings, issuer: LocalIssuer) -> Iterator[str]:
    """make run AUTH=jwt's API: a sign-in token from the local issuer is required."""
    with jwt_api(issuer) as url:
        yield url


FULL_CHECK_EXAMPLES = 20


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("operation_id", OPERATIONS)
def test_every_check_of_the_fuzzer_passes_against_the_api_people_sign_in_to(
    jwt_url: str, issuer: LocalIssuer, operation_id: str, mode: GenerationMode
) -> None:
    """Every check Schemathesis has (authentication ignored, negative data accepted, positive data
    rejected, undeclared statuses and headers, ...), as an approver who signed in (every route's work
    reached, the operator's too)."""
    signed_in = {"Authorization": f"Bearer {issuer.mint('alice')}"}
    schema = schemathesis.openapi.from_url(f"{jwt_url}/openapi.json", headers=signed_in)
    assert schema.raw_schema["components"]["securitySchemes"]["signIn"]["scheme"] == "bearer"
    assert "carry a sign-in token" in schema.raw_schema["info"]["description"]
    operation = schema.find_operation_by_id(operation_id)

    def every_check_passes(case: schemathesis.Case) -> None:
        if mode == GenerationMode.POSITIVE and case.query:
            # What no schema can say, left out of valid requests (a made-up one is refused, 422, as it
            # should be): a page's cursor is one the server signed, and the audit trail's range runs
            # forward from an ISO 8601 date or time that exists.
            for unsayable in ("cursor", "since", "until"):
                case.query.pop(unsayable, None)
        # A query parameter whose value is an empty list is not sent at all (requests leaves it out): a
        # negative case made only of one (``{"limit": 1, "": []}``) reaches the API as a valid request.
        assume(not any(value == [] for value in (case.query or {}).values()))
        case.call_and_validate(base_url=jwt_url, headers=signed_in)

    fuzz(operation, mode, FULL_CHECK_EXAMPLES, every_check_passes)
