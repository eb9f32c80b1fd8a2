"""GetTurn: GET /sessions/{sessionId}/turns/{turnId}, GET /sessions/{sessionId}/interactions, GET /openapi.json.

Thin: the shared routes parse the request, call the service and shape the reply.
"""

from typing import Any

from resumable.api.app import handle


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, context)
