"""BedrockModel: Amazon Bedrock through the ``converse`` API of bedrock-runtime.

Converse is the runtime's own shape, so a request is the conversation as it stands, and the reply is
checked, not translated. The client is botocore's (boto3's are botocore's too; boto3 itself, and
s3transfer with it, is not imported), built on the first call, with botocore's retries; what a failed
call or a reply without an answer means for the turn is ``resumable.runtime.models.failures``.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Literal

from resumable.runtime.models.failures import bedrock_failure, check_stop_reason
from resumable.runtime.models.model import check_assistant_message

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

# Agents are built afresh for every run, each with its models: their clients come from one botocore
# session, which loads Bedrock's service model once per process. (Making clients from one session on
# two threads at once is not safe: under the lock.)
_lock = threading.Lock()
_made: list[Any] = []


def _session() -> Any:
    with _lock:
        if not _made:
            from resumable.botocore_data import new_session  # (botocore's data read with less work)

            _made.append(new_session())
        return _made[0]


logger = logging.getLogger(__name__)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


class BedrockModel:
    """Amazon Bedrock through the ``converse`` API of bedrock-runtime.

    ``inference_config`` is Converse's ``inferenceConfig``; snake_case keys (``max_tokens``) are
    accepted too. boto3 is imported only when no ``client`` is given and the first call is made.

    The client it builds retries throttled and failed calls as botocore does (``retry_mode``
    ``"standard"``, or ``"adaptive"`` to also slow its own rate), ``max_retries`` times after the first
    attempt, whatever ``AWS_RETRY_MODE`` and ``AWS_MAX_ATTEMPTS`` say. A ``client`` passed in keeps its
    own configuration, retries included.

    A failed call raises a ``ModelError`` that says no reply was recorded: ``ContextWindowOverflowError``
    when the conversation is too long for the model, ``ModelStopError`` when the model stopped without an
    answer (stop reasons ``max_tokens``, ``guardrail_intervened``, ``content_filtered``,
    ``malformed_model_output``, ``malformed_tool_use``).
    """

    def __init__(
        self,
        model_id: str,
        client: BedrockRuntimeClient | None = None,
        *,
        max_retries: int = 3,
        retry_mode: Literal["standard", "adaptive"] = "standard",
        **inference_config: Any,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, got {max_retries}")
        self.model_id = model_id
        self._client = client
        self.max_retries = max_retries
        self.retry_mode = retry_mode
        self.inference_config = {_camel(k): v for k, v in inference_config.items()}

    @property
    def client(self) -> BedrockRuntimeClient:
        if self._client is None:
            from botocore.config import Config

            config = Config(retries={"mode": self.retry_mode, "total_max_attempts": self.max_retries + 1})
            made = _session()
            with _lock:
                self._client = made.create_client("bedrock-runtime", config=config)
        return self._client

    def converse(
        self, messages: list[dict[str, Any]], system_prompt: str | None, tool_specs: list[dict[str, Any]]
    ) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        request: dict[str, Any] = {"modelId": self.model_id, "messages": messages}
        if system_prompt:
            request["system"] = [{"text": system_prompt}]
        if tool_specs:
            request["toolConfig"] = {"tools": [{"toolSpec": spec} for spec in tool_specs]}
        if self.inference_config:
            request["inferenceConfig"] = self.inference_config
        try:
            response = self.client.converse(**request)
        except (BotoCoreError, ClientError) as error:
            raise bedrock_failure(error, self.model_id, self.max_retries) from error
        stop_reason = response.get("stopReason")
        logger.debug("model_id=<%s>, stop_reason=<%s> | bedrock replied", self.model_id, stop_reason)
        message = response["output"].get("message")
        check_stop_reason(stop_reason, message, self.model_id, self.inference_config)
        return check_assistant_message(message, f"Bedrock reply from '{self.model_id}'")
