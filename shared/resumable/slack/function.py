"""The Slack function (template.yaml's ``SlackFunction``): its three events, each handed to the
module that does the work.

- Slack's interactivity request (``POST /slack/interactions``, an API Gateway HTTP API event, with
  no authorizer: Slack signs it): ``acknowledge`` answers at once. Deny and Edit open their modal
  here, because the click's ``trigger_id`` lasts three seconds; every other click (an approval, a
  submitted modal) is handed to this function again, asynchronously, as Slack sent it
  (``{"slackRequest": {"body", "timestamp", "signature"}}``), so the turn it resumes may take longer
  than Slack waits. If that invocation cannot be made, the click is processed here instead: it is not
  lost, though Slack may tell the person it timed out.
- ``{"slackRequest": ...}``: the request is checked again for Slack's signature, within the hour
  Lambda retries it (``read_handed_on``), then ``process`` answers its click through the service, as
  the principal the Slack user maps to, and tells them what happened. Being allowed to invoke the
  function is not being Slack: a request whose signature does not verify is refused, and so is a
  click handed on unsigned (``{"slackClick": ...}``); nothing is answered.
- An event of the bus (``Interaction Requested``, ``Answered``, ``Closed``, by the template's rule):
  ``Notices`` posts the question or updates its message in place, as the table holds the question.

Configured by the environment: ``SLACK_CHANNEL`` (where questions are posted, unless their approval
rule names a ``slackChannel``), ``SLACK_SECRET_ARN`` (a Secrets Manager secret, the JSON object
``{"botToken": "xoxb-...", "signingSecret": "..."}``), ``SLACK_TEAMS`` (comma-separated workspace
ids whose users may answer), ``SLACK_PEOPLE`` (a JSON object: Slack user id or e-mail address ->
principal), ``SLACK_FUNCTION`` (its own name, to hand itself clicks), ``SLACK_API_URL`` (Slack's
Web API; the local stand-in's, locally) and ``API_URL`` (the HTTP API, for the inbox page's links in
its messages).
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from resumable.aws.lambdas import Lambdas
from resumable.aws.parameters import Parameters
from resumable.aws.secrets import Secrets
from resumable.config import Settings
from resumable.exceptions import AwsError
from resumable.service import Service
from resumable.slack.interactivity import acknowledge, process
from resumable.slack.notices import Notices
from resumable.slack.people import LookupFailedError, People, trusted_email
from resumable.slack.requests import Click, SlackRequest, SlackRequestError, read_handed_on
from resumable.store.slack_messages import SlackMessages

logger = logging.getLogger(__name__)

SLACK_REQUEST = "slackRequest"
UNSIGNED_CLICK = "slackClick"  # (how clicks were handed on before they were signed: refused)
SLACK_API = "https://slack.com/api/"
_NOW = ("deny", "edit")  # (the clicks that open a modal: processed before the trigger id expires)


class SlackConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    channel: str = Field(min_length=1)
    secret_arn: str = Field(min_length=1)
    teams: tuple[str, ...] = Field(min_length=1)
    people: dict[str, str] = Field(default_factory=dict)
    api_url: str = SLACK_API
    function: str | None = None  # (this function's name, to hand it clicks: its context's ARN if unset)
    api_url_parameter: str | None = None  # (the SSM parameter holding the HTTP API's URL: the inbox links)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SlackConfig:
        env = os.environ if env is None else env
        try:
            people = json.loads(env.get("SLACK_PEOPLE") or "{}")
        except ValueError as error:
            raise ValueError(
                f"SLACK_PEOPLE is not JSON ({error}): give an object of Slack id or e-mail -> principal"
            ) from None
        try:
            return cls(
                channel=env.get("SLACK_CHANNEL", ""),
                secret_arn=env.get("SLACK_SECRET_ARN", ""),
                teams=tuple(t.strip() for t in env.get("SLACK_TEAMS", "").split(",") if t.strip()),
                people=people,
                api_url=env.get("SLACK_API_URL") or SLACK_API,
                function=env.get("SLACK_FUNCTION") or None,
                api_url_parameter=env.get("API_URL_PARAMETER") or None,
            )
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
            raise ValueError(
                f"the Slack configuration in the environment is not valid ({problems}): set SLACK_CHANNEL, "
                "SLACK_SECRET_ARN, SLACK_TEAMS and SLACK_PEOPLE (docs/desk.md)"
            ) from None


class SlackFunction:
    def __init__(self, settings: Settings, config: SlackConfig, service: Service) -> None:
        self.settings, self.config, self.service = settings, config, service
        self.secrets, self.lambdas = Secrets(settings), Lambdas(settings)
        self._web: Any = None
        self._token: str | None = None

    def handle(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "requestContext" in event:
            return self.interaction(event, context)
        if SLACK_REQUEST in event:
            return {"done": self.handed_on(event[SLACK_REQUEST])}
        if UNSIGNED_CLICK in event:
            raise _refused("it is a click handed on unsigned, not a request Slack signed; nothing was answered")
        if "detail-type" in event:
            return {"done": self.notices().handle(event)}
        raise ValueError(
            "the Slack function takes Slack's interactivity requests (HTTP), the requests it hands itself and "
            f"the bus's events; this event has none of their shapes (keys {sorted(event)[:10]}): nothing was done"
        )

    def handed_on(self, request: Any) -> str:
        """Answer the click of a request handed on, once Slack's signature on it is checked again."""
        try:
            click = read_handed_on(SlackRequest.model_validate(request), self._secret("signingSecret"))
        except ValidationError:
            raise _refused("it is not a request handed on (body, timestamp, signature); nothing was answered") from None
        except SlackRequestError as error:
            raise _refused(str(error)) from None
        return self.process(click)

    def interaction(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        body: str | bytes = event.get("body") or ""
        if event.get("isBase64Encoded"):
            body = base64.b64decode(body)
        headers = event.get("headers") or {}
        ack = acknowledge(body, headers, self._secret("signingSecret"))
        if ack.click is not None:
            if ack.click.kind in _NOW:
                self.process(ack.click)
            else:
                self._later(SlackRequest.of(body, headers), ack.click, context)
        reply: dict[str, Any] = {"statusCode": ack.status, "headers": {"content-type": "application/json"}}
        reply["body"] = json.dumps(ack.body) if ack.body is not None else ""
        return reply

    def _later(self, request: SlackRequest, click: Click, context: Any) -> None:
        """Hand ``request`` (whose click is ``click``) to this function, to be read again and answered."""
        itself = self.config.function or getattr(context, "invoked_function_arn", None)
        try:
            if not itself:
                raise AwsError("the context names no function to invoke")
            self.lambdas.invoke_async(itself, {SLACK_REQUEST: request.model_dump()})
        except AwsError:
            self.process(click)  # (not lost: answered now, though Slack may have stopped waiting)

    def process(self, click: Click) -> str:
        return process(click, self.service, self.people(), self.web(), self.notices())

    def notices(self) -> Notices:
        return Notices(
            self.messages,
            self.service.store,
            self.web(),
            self.config.channel,
            self.settings.retention_seconds,
            self.api_url(),
        )

    def api_url(self) -> str | None:
        """The HTTP API whose inbox page a message links to: the stack's parameter (API_URL_PARAMETER,
        read once a process), else API_URL; never an event's word."""
        if self.config.api_url_parameter:
            return self.parameters.value(self.config.api_url_parameter)
        return self.settings.api_url

    @functools.cached_property
    def parameters(self) -> Parameters:
        return Parameters(self.settings)

    @functools.cached_property
    def messages(self) -> SlackMessages:
        """Where each question's message is: its table client made once a process, not once an event."""
        return SlackMessages(self.settings)

    def people(self) -> People:
        return People(self.config.people, self.config.teams, self._email_of)

    def _email_of(self, user_id: str) -> str | None:
        from slack_sdk.errors import SlackApiError

        try:
            return trusted_email(self.web().users_info(user=user_id).data, self.config.teams)
        except SlackApiError as error:
            if error.response.get("error") == "user_not_found":
                return None  # (Slack knows no such user: nobody the mapping names)
            raise LookupFailedError(str(error.response.get("error") or error)) from error
        except OSError as error:
            raise LookupFailedError(str(error)) from error

    def web(self) -> Any:
        """slack_sdk's WebClient with the bot token (made again when the secret changed)."""
        token = self._secret("botToken")
        if self._web is None or token != self._token:
            from slack_sdk import WebClient

            self._web, self._token = WebClient(token=token, base_url=self.config.api_url, timeout=10), token
        return self._web

    def _secret(self, name: str) -> str:
        value = self.secrets.json(self.config.secret_arn).get(name)
        if not isinstance(value, str) or not value:
            raise AwsError(f"the Slack secret {self.config.secret_arn} holds no {name!r}: see docs/desk.md")
        return value


def _refused(why: str) -> SlackRequestError:
    """The refusal of an invocation that is not a request Slack signed (``why`` says what was not done),
    logged as it is raised."""
    said = f"the Slack function refused a click handed to it: {why}"
    logger.warning("%s", said)
    return SlackRequestError(said, 401)
