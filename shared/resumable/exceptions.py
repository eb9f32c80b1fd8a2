"""Every error resumable raises, in one place.

Runtime errors about a caller's input subclass ``ValueError`` so ordinary Python code can catch them
as such; errors from a model provider propagate out of the agent call untouched by the tool loop, so
a failed model call never turns into a tool result that consumes a person's answer.
"""

from __future__ import annotations


class ResumableError(Exception):
    """Base class of every error raised by resumable."""


class InvalidInvocationError(ResumableError, ValueError):
    """An agent call that cannot be carried out as asked; nothing was changed."""


class UnknownInterruptError(InvalidInvocationError):
    """A response names an interrupt id that is not pending."""


class SnapshotError(ResumableError, ValueError):
    """Stored state that this version of resumable cannot load; nothing was changed."""


class ModelError(ResumableError):
    """The model provider failed or replied with something that is not a Converse message.

    It propagates out of the agent call (it is never given to the model as a tool error), so the
    caller can retry from the last stored state.
    """


class ContextWindowOverflowError(ModelError):
    """The conversation sent to the model is longer than its context window. An agent with a
    conversation manager reduces the conversation and asks again; without one, the turn fails."""


class ModelStopError(ModelError):
    """The model stopped for a reason other than answering or calling tools (``max_tokens``,
    ``guardrail_intervened``, ``content_filtered``, a refusal): its reply was not recorded."""

    def __init__(self, message: str, stop_reason: str) -> None:
        super().__init__(message)
        self.stop_reason = stop_reason


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was asked for more replies than its script holds."""


class ActionFencedError(ResumableError):
    """Raised by an approved action whose fencing token's condition failed: a newer attempt took the
    turn over, so this one did nothing. The journal records the action as not run."""


class AgentFactoryError(ResumableError):
    """The application's agent factory raised, or returned something that is not an Agent: no agent
    ran. A new turn fails saying so; a resumed one waits, its answers kept, for the sweeper or
    ``recover`` to try again (an MCP server that was down, say)."""


class AppSettingError(ResumableError):
    """An app setting or secret the agent factory asked for is not there, or not the function's to read
    (resumable.aws.app_settings): the error names it and says what to set, never its value."""


class ActionOutcomeUnknownError(ResumableError):
    """A tool cannot tell whether its action took effect (no answer came: a timeout, a connection lost
    during the call). An approved action that raises it is recorded in doubt by the action journal
    (never reported as done, never run again); the model is told its outcome is unknown."""


class MCPServerError(ResumableError):
    """An MCP server could not be connected, or gave no answer to a call (a timeout, a lost
    connection). The message says what did not happen, or that a call's outcome is unknown. An
    ``MCPTool`` tells the model so in its tool result rather than raising it."""


class MCPOutcomeUnknownError(MCPServerError, ActionOutcomeUnknownError):
    """An MCP server gave no answer to a call it may have run: the call's outcome is unknown."""


class GrantLapsedError(ResumableError):
    """The standing grant an approved action was about to run under was revoked or had expired when its
    journal entry would have begun: nothing was recorded and nothing ran; the call asks a person instead."""


class StaleCommitError(ResumableError):
    """A commit whose expectations no longer hold (the lease moved on, or the turn settled): nothing was
    written."""


class LeaseLostError(ResumableError):
    """This invocation no longer holds the turn's lease: another one took it over. It must stop."""


class ServiceError(ResumableError):
    """An error a caller of the service sees. ``code`` is machine-readable; the HTTP edge maps it to a
    status once. Nothing was written for the request that raised it, but, for a refused approval or
    deny by one who may see the question, its record on the audit trail (docs/audit.md)."""

    code = "error"


class BadRequestError(ServiceError):
    """The request is malformed (400)."""

    code = "bad_request"


class ForbiddenError(ServiceError):
    """The caller may not use this route at all: an operator's route, and the caller is not an
    approver (403)."""

    code = "forbidden"


class GrantRefusedError(ForbiddenError):
    """The question's approval rule does not allow the standing grant an approval asked to give (403):
    nothing was answered, and (not being an answer refused) nothing goes on the audit trail."""


class NotFoundError(ServiceError):
    """No such session, turn or interaction, or it belongs to another session (404)."""

    code = "not_found"


class ConflictError(ServiceError):
    """The interaction was already answered differently (409); ``winning`` is the answer that stands,
    ``answered`` who gave it, when and from where (``yours``: the caller did)."""

    code = "conflict"

    def __init__(self, message: str, winning: object = None, answered: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.winning = winning
        self.answered = answered


class TurnBusyError(ServiceError):
    """The session or turn is busy with another turn or invocation (409)."""

    code = "turn_busy"


class GoneError(ServiceError):
    """The interaction is no longer live: superseded, expired or canceled (410)."""

    code = "gone"


class ValidationFailedError(ServiceError):
    """The request is well-formed but its content is not acceptable (422)."""

    code = "validation_failed"


class AwsError(ResumableError):
    """An AWS call failed (DynamoDB, S3, Lambda or Step Functions: throttling, a network error, a
    service error, after botocore's retries). Nothing after it happened; the turn is left resumable
    or settled, and ``recover`` (or a retry) moves it on. It is never turned into a tool result."""


class NotPublishedError(ResumableError):
    """An outbox record the publisher cannot put on the bus now: it is delivered again, and after the
    event source mapping's last retry its batch goes to the dead-letter queue."""
