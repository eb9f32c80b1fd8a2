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


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was asked for more replies than its script holds."""
