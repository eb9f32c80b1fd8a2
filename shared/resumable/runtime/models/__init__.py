"""Model providers. A model takes a Converse conversation and returns the next assistant message.

- model.py: what a model is (``Model``) and the check every reply passes (``check_assistant_message``);
- bedrock.py: ``BedrockModel``, Amazon Bedrock's Converse API (boto3 imported on its first call);
- scripted.py: ``ScriptedModel``, replies from a script, for tests and demos;
- failures.py: what each provider's failures mean for the turn (the errors it fails with).

``OpenAIModel``, for any server that speaks OpenAI's chat-completions API, is
``resumable.runtime.chat_completions``, imported on first use.
"""

from resumable.runtime.models.bedrock import BedrockModel
from resumable.runtime.models.model import Model, check_assistant_message
from resumable.runtime.models.scripted import ScriptedModel

__all__ = ["BedrockModel", "Model", "ScriptedModel", "check_assistant_message"]
