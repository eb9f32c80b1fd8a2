"""Slack: POST /slack/interactions (Slack's interactivity requests, signed by Slack, no authorizer),
its own clicks handed on asynchronously, and the bus's question events posted and updated in Slack.

Thin: resumable.slack.function reads each event and hands it to the module that does the work.
"""

import functools
import os
from typing import Any

from resumable.api import lambda_init

with lambda_init.quiet():  # no garbage collection during the init: see resumable.api.lambda_init
    from resumable.api.app import check_settings, service_for
    from resumable.api.observability import logger, tracer
    from resumable.config import Settings
    from resumable.metrics import flushing
    from resumable.slack.function import SlackConfig, SlackFunction

    check_settings()  # a bad setting stops the function's start, named
    if os.environ.get("SLACK_CHANNEL"):
        SlackConfig.from_env()  # (so does a bad Slack setting)


@functools.cache
def slack() -> SlackFunction:
    """This process's Slack function, from the environment, built on its first event."""
    settings = Settings.from_env()
    return SlackFunction(settings, SlackConfig.from_env(), service_for(settings.continue_function))


@tracer.capture_lambda_handler(capture_response=False)
@logger.inject_lambda_context(clear_state=True)
@flushing
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return slack().handle(event, context)
