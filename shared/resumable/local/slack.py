"""The Slack function on the embedded AWS, as the template deploys it: the Slack stand-in playing
Slack, the app's secret in the embedded Secrets Manager, the function's environment, and the bus's
question events delivered to the function as the template's rule delivers them (a rule with the
template's pattern copies them to a queue; a thread hands each to the handler, and tries an event
again, up to three times in all, as Lambda retries an asynchronous invocation).

Locally, Slack user ``U0LOCAL`` of workspace ``T0LOCAL`` (``local@example.com``) answers as the
local principal; ``#approvals`` is the channel.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from resumable.aws.clients import client
from resumable.config import Settings
from resumable.local.functions import LambdaContext, function_arn, functions, load_handler, load_template
from resumable.local.slack_standin import SlackStandIn, slack_stand_in

logger = logging.getLogger(__name__)

SLACK = "SlackFunction"
CHANNEL, TEAM, USER, EMAIL = "#approvals", "T0LOCAL", "U0LOCAL", "local@example.com"
ATTEMPTS = 3  # (Lambda: an asynchronous invocation and its two retries)


@dataclass
class LocalSlack:
    stand_in: SlackStandIn
    queue_url: str
    environment: dict[str, str]


def rule_pattern(template: dict[str, Any] | None = None) -> dict[str, Any]:
    """The pattern of the rule that delivers the bus's events to the Slack function, as template.yaml says."""
    template = template or load_template()
    [pattern] = [
        event["Properties"]["Pattern"]
        for event in template["Resources"][SLACK]["Properties"]["Events"].values()
        if event["Type"] == "EventBridgeRule"
    ]
    return dict(pattern)


@contextmanager
def slack_locally(settings: Settings, interactions_url: str, principal: str, port: int = 0) -> Iterator[LocalSlack]:
    """The stand-in (on ``port``, or a free one) sending clicks to ``interactions_url``, the Slack
    function's environment (``LocalSlack.environment``: the caller sets it in this process's, as the
    template sets the function's), and the bus's events delivered to it, until the block ends."""
    signing_secret = secrets.token_hex(16)
    users = {USER: {"name": "local", "team_id": TEAM, "is_email_confirmed": True, "profile": {"email": EMAIL}}}
    with slack_stand_in(users, port, signing_secret=signing_secret, interactions_url=interactions_url) as stand_in:
        secret = client("secretsmanager", settings).create_secret(
            Name=f"resumable-slack-{uuid.uuid4().hex[:8]}",
            SecretString=json.dumps({"botToken": stand_in.token, "signingSecret": signing_secret}),
        )
        # The API's URL, in a parameter as the template writes it (its inbox links: never an event's).
        api_url = f"/{settings.table_name}-{uuid.uuid4().hex[:8]}/api-url"
        client("ssm", settings).put_parameter(
            Name=api_url, Value=interactions_url.removesuffix("/slack/interactions"), Type="String"
        )
        environment = {
            "API_URL_PARAMETER": api_url,
            "SLACK_FUNCTION": function_arn(SLACK, settings.region),
            "SLACK_CHANNEL": CHANNEL,
            "SLACK_SECRET_ARN": secret["ARN"],
            "SLACK_TEAMS": TEAM,
            "SLACK_PEOPLE": json.dumps({EMAIL: principal}),
            "SLACK_API_URL": stand_in.url,
        }
        queue_url = _subscribe(settings)
        stop = threading.Event()
        thread = threading.Thread(target=_deliver, args=(settings, queue_url, stop), name="slack-events", daemon=True)
        thread.start()
        try:
            yield LocalSlack(stand_in, queue_url, environment)
        finally:
            stop.set()
            thread.join(timeout=30)


def _subscribe(settings: Settings) -> str:
    """A queue the template's Slack rule copies the bus's events to; its URL."""
    events, sqs, bus = client("events", settings), client("sqs", settings), settings.event_bus_name
    queue_url: str = sqs.create_queue(QueueName=f"{bus}-slack")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name=f"{bus}-slack", EventBusName=bus, EventPattern=json.dumps(rule_pattern()))
    events.put_targets(Rule=f"{bus}-slack", EventBusName=bus, Targets=[{"Id": "slack", "Arn": arn}])
    return queue_url


def _deliver(settings: Settings, queue_url: str, stop: threading.Event) -> None:
    """Hand each event on the queue to the Slack function's handler, as the rule's asynchronous
    invocation would: an event the handler fails on is tried again, ``ATTEMPTS`` times in all."""
    handler = load_handler(functions(load_template())[SLACK])
    sqs = client("sqs", settings)
    while not stop.is_set():
        try:
            reply = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                AttributeNames=["ApproximateReceiveCount"],
            )
        except Exception:
            if stop.is_set():
                return  # (the embedded AWS went away first)
            logger.exception("reading the Slack function's events failed; trying again")
            stop.wait(1)
            continue
        for message in reply.get("Messages", []):
            tries = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
            try:
                handler(json.loads(message["Body"]), LambdaContext(SLACK, uuid.uuid4().hex))
            except Exception as error:
                if tries < ATTEMPTS:
                    logger.warning("the Slack function failed on an event (try %s of %s): %s", tries, ATTEMPTS, error)
                    sqs.change_message_visibility(
                        QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=1
                    )
                    continue
                logger.error("the Slack function failed on an event %s times; it is dropped: %s", ATTEMPTS, error)
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
