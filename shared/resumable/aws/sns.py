"""The topic NotifyEmail subscribes to: the Publisher alone tells it of each question (its policy lets
nothing else publish), so what arrives there was read from the table, never from the bus."""

from __future__ import annotations

from typing import Any

from resumable.aws.clients import LazyClient
from resumable.exceptions import AwsError


class Topic(LazyClient[Any]):
    """``Publish`` to the topic the settings name (``NOTIFY_TOPIC_ARN``). The client is made on first use."""

    service = "sns"

    def publish(self, subject: str, message: str) -> None:
        topic = self.settings.notify_topic_arn
        if not topic:
            raise AwsError("no topic is configured (NOTIFY_TOPIC_ARN): nobody is told by e-mail")
        try:
            self.client.publish(TopicArn=topic, Subject=subject, Message=message)
        except Exception as error:
            raise AwsError(f"Publish to the topic {topic} failed: {error}") from error
