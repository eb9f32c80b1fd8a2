"""The service as the deployed functions run it: each use case's AWS calls are recorded as the calls of
the function that serves it (resumable.local.permissions), so the integration tier's flows (races,
faults, expiry, retention) count toward what each function's role must allow."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from resumable.api.app import CONTINUE_EVENT
from resumable.aws.lambdas import Lambdas
from resumable.config import Settings
from resumable.local.permissions.calls import acting_as
from resumable.local.template import InProcessLambda, functions_in_process
from resumable.service.dependencies import Continuation
from resumable.service.service import Service

# Which function serves each use case (template.yaml's routes, its direct invocations and schedule).
SERVED_BY = {
    "start_turn": "StartTurnFunction",
    "submit_approval": "SubmitApprovalFunction",
    "dismiss": "SubmitApprovalFunction",
    "decision_link": "DecisionLinksFunction",  # GET /decide/{token}: the link's page
    "decide_by_link": "DecisionLinksFunction",
    "recover": "SubmitApprovalFunction",  # a continuation, which SubmitApproval runs
    "recover_turn": "SubmitApprovalFunction",
    "republish": "SubmitApprovalFunction",
    "cancel": "CancelFunction",
    "delete_session": "CancelFunction",
    "restore_session": "CancelFunction",
    "get_turn": "GetTurnFunction",
    "conversation": "GetTurnFunction",
    "list_interactions": "GetTurnFunction",
    "inbox": "GetTurnFunction",
    "show_interaction": "GetTurnFunction",
    "audit": "GetTurnFunction",
    "verify_audit": "GetTurnFunction",
    "grants": "GetTurnFunction",
    "revoke_grant": "CancelFunction",
    "stalled": "GetTurnFunction",
    "inspect": "GetTurnFunction",
    "sweep": "SweeperFunction",
}


# The use cases that, with no continuation, run a turn themselves, which the deployed functions (all
# given CONTINUE_FUNCTION) never do: they leave it to SubmitApproval. Their calls count only from a
# service with a continuation. (Without one, the others make the calls they make deployed, less the
# continuation's Invoke.)
CONTINUE_OR_RUN = {"get_turn", "recover", "recover_turn", "sweep"}


def as_deployed(service: Service) -> Service:
    """``service``, each use case's calls made as the function that serves it."""
    environment = service.settings.environment()
    for name, function in SERVED_BY.items():
        use_case: Callable[..., Any] = getattr(service, name)
        deployed_only = name in CONTINUE_OR_RUN

        @functools.wraps(use_case)
        def acting(
            *args: Any,
            _use_case: Callable[..., Any] = use_case,
            _function: str = function,
            _deployed_only: bool = deployed_only,
            **kwargs: Any,
        ) -> Any:
            if _deployed_only and service.deps.continuation is None:
                return _use_case(*args, **kwargs)
            with acting_as(_function, environment):
                return _use_case(*args, **kwargs)

        setattr(service, name, acting)
    continued_by = service.continued_by
    service.continued_by = lambda continuation: as_deployed(continued_by(continuation))  # type: ignore[method-assign]
    return service


@contextmanager
def continued_through_lambda(
    settings: Settings,
) -> Iterator[tuple[Continuation, list[tuple[str, str]], InProcessLambda]]:
    """The continuation the deployed functions have (an asynchronous ``Invoke`` of CONTINUE_FUNCTION,
    as resumable.api.app makes it), with SubmitApproval answered in this process by a stand-in that
    records what it was asked to continue; and the in-process Lambda (``wait()`` for the invocations)."""
    asked: list[tuple[str, str]] = []

    def submit_approval(event: dict[str, Any], _context: Any) -> dict[str, Any]:
        asked.append((event[CONTINUE_EVENT]["sessionId"], event[CONTINUE_EVENT]["turnId"]))
        return {}

    lambdas = Lambdas(settings)

    def continuation(session_id: str, turn_id: str) -> None:
        assert settings.continue_function, "the settings name no CONTINUE_FUNCTION"
        lambdas.invoke_async(settings.continue_function, {CONTINUE_EVENT: {"sessionId": session_id, "turnId": turn_id}})

    with functions_in_process({"SubmitApprovalFunction": submit_approval}) as router:
        yield continuation, asked, router
