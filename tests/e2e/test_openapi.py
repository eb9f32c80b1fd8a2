"""The OpenAPI document describes the API that exists: it validates as OpenAPI 3.1, and a schema-driven
fuzzer (Schemathesis) against the local server finds no 5xx, no status the document does not declare,
no reply of another content type and none that contradicts its schema.

Bounded by examples per operation, never by time: a busy machine runs the same cases, only slower.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.local_api import call

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
    "listAudit",
    "deleteSession",
    "restoreSession",
    "listStalledTurns",
    "inspectTurn",
    "recoverTurn",
    "republishEvents",
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
        assert {"403", "500"} <= declared, operation["operationId"]
        # Every route that names a session answers 404 for an unknown one (or another principal's).
        assert ("404" in declared) == ("sessionId" in str(operation.get("parameters"))), operation["operationId"]
        for status, response in operation["responses"].items():
            schema = response["content"]["application/json"]["schema"]["$ref"]
            if status.startswith(("4", "5")) and status != "403":
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
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operation = schema.find_operation_by_id(operation_id)

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def every_reply_is_documented(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=url, checks=CHECKS)

    every_reply_is_documented()
