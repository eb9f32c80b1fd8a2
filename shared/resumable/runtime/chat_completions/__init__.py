"""OpenAIModel: a model behind any server that speaks OpenAI's chat-completions API (OpenAI, Azure OpenAI,
vLLM, Ollama, LiteLLM), in the runtime's Converse shape.

- model.py: ``OpenAIModel``, its parameters and its ``converse``;
- translation.py: the Converse conversation as chat-completions messages on the way out, and the reply
  back as a Converse assistant message; nothing else knows another shape;
- transport.py: the openai SDK's client (``pip install 'resumable[openai]'``), imported when the first
  call is made, never by ``import resumable``; and the attempts of each request: this package's own
  retries (the SDK's are turned off), bounded, with a jittered backoff, honouring the server's
  Retry-After, through an injectable ``sleep``.

What its failures mean for the turn is resumable.runtime.models.failures, beside Bedrock's.
"""

from resumable.runtime.chat_completions.model import OpenAIModel
from resumable.runtime.chat_completions.transport import FIRST_BACKOFF_SECONDS, LONGEST_BACKOFF_SECONDS

__all__ = ["FIRST_BACKOFF_SECONDS", "LONGEST_BACKOFF_SECONDS", "OpenAIModel"]
