"""The JSON schemas of the bodies' free-form parts, as the OpenAPI document shows them (the service checks
what they hold)."""

from __future__ import annotations

from typing import Any

# The answer's schema: an approval answer, or any JSON but null for an interrupt of another kind.
ANSWER_SCHEMA: dict[str, Any] = {
    "description": "The answer. To an approval: {'decision': 'approve'} (with 'input' to edit the call, where "
    "the interaction is editable) or {'decision': 'deny', 'message': '...'}; "
    "to an interrupt of another kind, any JSON value but null. At most 8,192 bytes of JSON.",
    "anyOf": [
        {
            "title": "ApprovalAnswer",
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["approve", "deny"]},
                "message": {"type": "string", "description": "Told to the model: why (deny), or a note (approve)."},
                "input": {
                    "type": "object",
                    "description": "Approve with this input instead (only where the interaction is editable); "
                    "it must match the tool's input schema.",
                },
            },
            "required": ["decision"],
            "additionalProperties": False,
        },
        {"not": {"type": "null"}},
    ],
    "examples": [
        {"decision": "approve"},
        {"decision": "deny", "message": "not prod"},
        {"decision": "approve", "input": {"name": "prod-db-replica"}},
    ],
}


GRANT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "With an approval ({'decision': 'approve'}; with anything else, 403), where its rule allows "
    "grants: let the same tool's later calls run without a question, in this scope, for this long, optionally "
    "only with inputs whose named fields match patterns (docs/approval-rules.md#standing-grants; 403 where the "
    "rule does not allow it).",
    "properties": {
        "scope": {"enum": ["session", "principal"], "default": "session"},
        "for": {
            "description": "How long: seconds, or '90s', '30m', '8h', '2d' (at most the rule's grants.max).",
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0},
                {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*[smhd]\s*$"},
            ],
        },
        "inputs": {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 20,
            "propertyNames": {"minLength": 1, "maxLength": 64},
            "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 256},
        },
    },
    "required": ["for"],
    "additionalProperties": False,
    "examples": [{"scope": "session", "for": "1h"}, {"scope": "principal", "for": "8h", "inputs": {"table": "orders"}}],
}
