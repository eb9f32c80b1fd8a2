"""The publisher's dead-letter queue: what it can never publish goes there, whole, at once."""

from __future__ import annotations

import json
from typing import Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError


class DeadLetters(LazyClient[Any]):
    """``SendMessage`` to the queue the settings name. The client is made on first use."""

    service = "sqs"

    def send(self, message: dict[str, Any]) -> None:
        queue = self.settings.dead_letter_queue_url
        if not queue:
            raise AwsError("no dead-letter queue is configured (DEAD_LETTER_QUEUE_URL): the record stays unpublished")
        try:
            self.client.send_message(QueueUrl=queue, MessageBody=json.dumps(message))
        except Exception as error:
            raise AwsError(f"SendMessage to the dead-letter queue failed: {error}") from error
