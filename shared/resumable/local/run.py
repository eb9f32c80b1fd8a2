"""``make run``: the embedded AWS and the local HTTP API on 127.0.0.1:3000, until Ctrl-C.

No Docker and no AWS account: moto serves DynamoDB, S3, Step Functions, EventBridge and SQS on
loopback, the table, bucket and state machine are created as template.yaml declares them,
template.yaml's routes call the same handlers Lambda would, Lambda invocations (the state machine's,
a turn's continuation) run those handlers in this process, the Publisher reads the table's
stream and puts every event on the embedded bus (a rule copies them to a queue the walkthrough
reads), and the Sweeper runs on its schedule. Locally you are an approver principal, so you can
answer the sessions a workflow owns. The default agent factory is the offline demo (set ``MODEL_ID``
and AWS credentials to use Bedrock; set ``AGENT_FACTORY`` to use your own). Where the project has an
app/ folder, its agents answer, and every function runs from its layers built for this machine
(resumable.local.application).
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from resumable.cli.client import local_run_state
from resumable.config import Settings
from resumable.local.app_values import LocalValues, put
from resumable.local.application import APP, DEMO, Application, application, layers_build
from resumable.local.authorizers import JwtVerifier, LocalCredentials
from resumable.local.embedded_aws import embedded_aws
from resumable.local.events import publishing
from resumable.local.execution import Layout, serving_from_layers
from resumable.local.functions import ROOT, function_arn, functions, load_template
from resumable.local.imports import check_function, places_of
from resumable.local.issuer import GROUPS_CLAIM, LocalIssuer
from resumable.local.schedules import running_schedules
from resumable.local.server import DEFAULT_PRINCIPAL, LocalServer, make_server
from resumable.local.slack import CHANNEL as SLACK_CHANNEL
from resumable.local.slack import USER as SLACK_USER
from resumable.local.slack import slack_locally
from resumable.local.template import create_state_machine, functions_in_process

if TYPE_CHECKING:
    from resumable.runtime.rules import ApprovalRule

# Every line of the walkthrough runs as printed, in order, in bash with curl >= 7.82 (tests/e2e follow it).
# @URL, @AWS, @MACHINE, @EXECUTION and @SLACK (the Slack stand-in) are filled in; the embedded AWS takes
# any signature (the Authorization header only names the service a request is for).
WALKTHROUGH = r"""resumable is serving @URL  (Ctrl-C stops it and forgets everything: the embedded AWS is in memory)

Paste these into another terminal, in order (bash, curl 7.82 or newer for --json, python3):

  field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }    # one field of a JSON reply

1. Ask for a risky step: the sub-agent db_admin pauses for a person's approval.
  T=$(curl -s -X POST @URL/sessions/demo/turns --json '{"prompt": "delete the prod-db record"}'); echo "$T"
      # 201 "status": "waiting"; its interaction: orchestrator -> db_admin wants delete_record {"name": "prod-db"}
  TURN=$(echo "$T" | field '["turnId"]'); REQ=$(echo "$T" | field '["interactions"][0]["requestId"]')
  curl -s '@URL/sessions/demo/interactions?status=requested'; echo      # the question, as a person would list it
  curl -s '@URL/interactions?status=requested'; echo      # the inbox: every session's open questions, most urgent first

2. Approve it: a new invocation rebuilds both agents, runs delete_record once, and finishes the turn.
  curl -s -X POST @URL/sessions/demo/turns/$TURN/interactions/$REQ --json '{"response": {"decision": "approve"}}'; echo
      # 200 "status": "completed", "output": "record prod-db deleted"

3. Deny another, saying why: nothing runs, and the model is told.
  T=$(curl -s -X POST @URL/sessions/demo-deny/turns --json '{"prompt": "delete the staging-db record"}')
  TURN=$(echo "$T" | field '["turnId"]'); REQ=$(echo "$T" | field '["interactions"][0]["requestId"]')
  curl -s -X POST @URL/sessions/demo-deny/turns/$TURN/interactions/$REQ \
       --json '{"response": {"decision": "deny", "message": "not staging"}}'
      # 200 "status": "completed", "output": "DENIED: not staging. The tool 'delete_record' did not run."

4. Cancel one instead: the turn and its child turn settle canceled; the question is withdrawn.
  T=$(curl -s -X POST @URL/sessions/demo-cancel/turns --json '{"prompt": "delete the test-db record"}')
  TURN=$(echo "$T" | field '["turnId"]')
  curl -s -X POST @URL/sessions/demo-cancel/turns/$TURN/cancel; echo      # 200 "status": "canceled"

5. A Step Functions workflow that waits for the approval (the embedded AWS runs the state machine):
  sfn() { curl -s @AWS -H "X-Amz-Target: AWSStepFunctions.$1" -H 'Content-Type: application/x-amz-json-1.0' \
       -H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/states/aws4_request, Signature=x' \
       -d "$2"; echo; }
  sfn StartExecution '{"stateMachineArn": "@MACHINE", "name": "wf-1",
       "input": "{\"sessionId\": \"wf-1\", \"prompt\": \"delete the dev-db record\"}"}'
  until Q=$(curl -sf '@URL/sessions/wf-1/interactions?status=requested') && [[ $Q == *requestId* ]]; do sleep 0.2; done
  TURN=$(echo "$Q" | field '["interactions"][0]["turnId"]'); REQ=$(echo "$Q" | field '["interactions"][0]["requestId"]')
  curl -s -X POST @URL/sessions/wf-1/turns/$TURN/interactions/$REQ --json '{"response": {"decision": "approve"}}'; echo
  while [[ $(sfn DescribeExecution '{"executionArn": "@EXECUTION"}') == *'"RUNNING"'* ]]; do sleep 0.2; done
  sfn DescribeExecution '{"executionArn": "@EXECUTION"}'      # "status": "SUCCEEDED", the completed Turn as output

6. Everything above was published as it happened: the Publisher reads the table's stream as Lambda would,
and puts each event on the embedded EventBridge bus; a rule copies every event to a queue. Read it (each
event once; --follow keeps reading, --json prints each event whole):
  @PYTHON -m resumable.local.events @QUEUE
      # demo  #1  Interaction Requested  orchestrator -> db_admin wants to run delete_record {"name": "prod-db"}

7. Who decided what, when and how they proved it: the audit trail (approvers; docs/audit.md).
  curl -s '@URL/audit?outcome=denied'; echo      # the deny of step 3: who, how signed in, the message, input digests
  @PYTHON -m resumable.cli --url @URL admin audit      # every vote, decision and action's outcome, as a table

8. Answer from Slack: the Slack function posts every question to @SLACK_CHANNEL on a Slack stand-in (@SLACK
plays Slack's Web API, and you at the Slack client: it signs each press as Slack does; docs/desk.md).
  T=$(curl -s -X POST @URL/sessions/demo-slack/turns --json '{"prompt": "delete the qa-db record"}')
  REQ=$(echo "$T" | field '["interactions"][0]["requestId"]')
  until [[ $(curl -s "@SLACK/local/messages?request=$REQ") == *approve* ]]; do sleep 0.2; done
  curl -s "@SLACK/local/messages?request=$REQ"; echo      # the question's message, with its buttons approve, deny
  curl -s -X POST @SLACK/local/press --json '{"request": "'"$REQ"'", "button": "approve", "user": "@SLACK_USER"}'; echo
  until [[ $(curl -s "@SLACK/local/messages?request=$REQ") == *Approved* ]]; do sleep 0.2; done
  curl -s "@SLACK/local/messages?request=$REQ"; echo      # updated in place: "Approved by ... UTC", no buttons

The resumable command (docs/desk.md) calls RESUMABLE_URL: set it in each shell you use it from.
  export RESUMABLE_URL=@URL

The OpenAPI document: @URL/openapi.json
"""

# What the walkthrough adds for each way of signing in. @CREDENTIALS, @ISSUER are filled in.
IAM_SIGN_IN = r"""
The inbox page, to answer in a browser (unsigned requests are you, an approver; delete_record is
destructive, so Approve asks once more, naming the record):
  @URL/inbox

Signed requests mean what they mean on AWS: each profile of @CREDENTIALS signs as its principal_arn
(local: an approver; alice and bob: only their own sessions); a bad signature is a 403.
  export AWS_SHARED_CREDENTIALS_FILE=@CREDENTIALS
  AWS_PROFILE=resumable-alice @PYTHON -m resumable.cli --url @URL --sign inbox
"""

JWT_WALKTHROUGH = r"""resumable is serving @URL with AUTH=jwt  (Ctrl-C stops it and forgets everything)

Every request needs a sign-in token from the local issuer @ISSUER, checked as API Gateway's JWT
authorizer would (no token, an expired one or one for another audience: 401). Its users: alice and dave
(group "approvers": answer every session), bob and carol (only their own sessions).

1. Ask a risky step as bob (the local issuer hands out tokens for curl at /local/token):
  TOKEN=$(curl -s '@ISSUER/local/token?user=bob')
  curl -s -X POST @URL/sessions/demo/turns -H "Authorization: Bearer $TOKEN" \
       --json '{"prompt": "delete the prod-db record"}'

2. Open the inbox page, sign in as alice and approve it (or sign in as bob: he sees only his own):
  @URL/inbox

3. Two people for one question, under an approval rule (the lines above the banner name the rules in
force; without one, stop this run and start it with, say,
  APPROVAL_RULES='[{"tools": ["delete_*"], "required": 2}]' make run AUTH=jwt
keeping your PORT): ask as bob again, approve as alice (the card says "your approval is 1 of 2" and
waits) and as dave in another browser or a private window: the second approval runs it
(docs/approval-rules.md).

Every question and answer is published as it happens; read them (each once):
  @PYTHON -m resumable.local.events @QUEUE

Who decided what, and how each signed in: the page's Audit trail (at its foot, as alice or dave).

The resumable command takes the same token (and calls RESUMABLE_URL: set it in each shell you use it from):
  export RESUMABLE_URL=@URL
  RESUMABLE_TOKEN="$TOKEN" @PYTHON -m resumable.cli inbox
"""


# Where make run writes the local credentials (once; later runs reuse them; ignored by git).
CREDENTIALS = ROOT / ".resumable" / "credentials"


def local_signers(default: str) -> dict[str, str]:
    """The profiles of the local credentials and the principals they sign as."""
    return {
        "resumable-local": default,
        "resumable-alice": "arn:aws:iam::000000000000:user/alice",
        "resumable-bob": "arn:aws:iam::000000000000:user/bob",
    }


def _local_credentials(default: str) -> LocalCredentials:
    """The local credentials: those an earlier make run wrote, so that runs side by side (and shells
    that exported the file) keep signing; new ones where there are none or they name other principals."""
    wanted = local_signers(default)
    if CREDENTIALS.exists():
        try:
            found = LocalCredentials.read(CREDENTIALS)
        except (KeyError, ValueError, OSError):
            found = LocalCredentials()
        if {profile: key.principal for profile, key in found.keys.items()} == wanted:
            return found
    made = LocalCredentials.generate(wanted)
    made.write(CREDENTIALS)
    return made


def _said_where(url: str) -> Callable[[], None]:
    """Tell the resumable command where this run serves (``local_run_state``; the command reads it when
    it is given no URL), for as long as it does; return what takes it back."""
    path = local_run_state()
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_name(f".{path.name}.{os.getpid()}")
    written.write_text(json.dumps({"url": url, "pid": os.getpid()}) + "\n")
    os.replace(written, path)  # (in place at once: a reader sees this run's or the one before)

    def take_back() -> None:
        try:
            if json.loads(path.read_text()).get("pid") == os.getpid():  # (not another run's, started since)
                path.unlink()
        except (OSError, ValueError):
            pass

    return take_back


def _listen(port: int, credentials: LocalCredentials | None, jwt: JwtVerifier | None) -> LocalServer:
    """The local API's server on ``port``, or exit saying which port is taken and how to pick another."""
    try:
        return make_server(port=port, credentials=credentials, jwt=jwt)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        sys.exit(
            f"make run: port {port} on 127.0.0.1 is already in use (another make run?). Stop what uses it, "
            f"or pick another port: PORT={port + 1} make run"
        )


def _said(rule: ApprovalRule) -> str:
    """A rule as the banner says it: what it asks of whom, and what happens in time."""
    who = "whoever may answer" if rule.approvers is None else ", ".join(rule.approvers)
    said = f"{rule.title!r}: {rule.required} approval(s) by {who}"
    said += "" if rule.allows_self_approval else ", never the one who started the turn"
    said += "; the input may be edited" if rule.edits else ""
    if rule.escalate_after is not None and rule.escalate_to:
        said += f"; after {rule.escalate_after:g} s unsettled, {', '.join(rule.escalate_to)} too"
    return said + ("; denied at its expiry" if rule.on_expiry == "deny" else "")


def _stop_on_sigterm() -> None:
    """SIGTERM (``kill``, a test's ``terminate()``) stops the run as Ctrl-C does: everything it made is
    taken back (the note of where it serves among them), not left behind."""

    def stop(_signal: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def _say_whose_agents(app: Application | None) -> None:
    """Above the walkthrough: whose agents answer, where they are not the demo's."""
    factory = os.environ.get("AGENT_FACTORY")
    if app is not None:
        print(
            f"{app.from_} {app.factory}: your agents answer here, each function run from its layers in a "
            "process of its own, as in Lambda (its logs print here). The walkthrough below was written for "
            "the demo's agents, so what it says they print differs; the routes are the same "
            "(docs/your-agent.md).\n",
            flush=True,
        )
    elif factory and factory != DEMO:
        print(
            f"AGENT_FACTORY={factory}: your agents answer here. The walkthrough below was written for the "
            "demo's agents, so what it says they print differs; the routes are the same.\n",
            flush=True,
        )


def _application(stack: ExitStack) -> tuple[Application | None, Layout | None]:
    """The project's application (app/) and its layers, its functions run from them, each in a process of
    its own, until ``stack`` closes; nothing where it has none (a word where samconfig.toml names one)."""
    app = application()
    if app is None:
        named = layers_build().stack_parameters().get("AgentFactory")
        if named and named != DEMO and not os.environ.get("AGENT_FACTORY") and not APP.is_dir():
            print(f"make run: samconfig.toml's AgentFactory is {named}, and there is no app/: the demo's agents answer")
        return None, None
    os.environ["AGENT_FACTORY"] = app.factory
    layout = app.build()
    stack.enter_context(serving_from_layers(layout))
    return app, layout


def _app_values(app: Application | None, layout: Layout | None, settings: Settings) -> dict[str, str]:
    """The application's settings and secrets (app/local.json) in the embedded AWS: the variables naming
    them. Then StartTurn's handler and the factory are tried as make predeploy tries them: what fails is
    said now, not at the first request."""
    if app is None or layout is None:
        return {}
    named = put(LocalValues.read(app.folder / "local.json"), settings)
    template = load_template()
    start = functions(template)["StartTurnFunction"]
    environment = {**os.environ, **settings.environment(), **named}
    problem = check_function(start, layout, template, app.factory, environment, places_of(app.folder))
    if problem is not None:
        print(f"make run: every turn will fail until this is mended: {problem}", flush=True)
    return named


def main() -> None:
    _stop_on_sigterm()
    port = int(os.environ.get("PORT", "3000"))
    auth = os.environ.get("AUTH", "iam").strip().lower() or "iam"
    if auth not in ("iam", "jwt"):
        sys.exit(f"make run: AUTH={auth!r} is not a way to sign in; use AUTH=iam (the default) or AUTH=jwt")
    default = os.environ.get("RESUMABLE_LOCAL_PRINCIPAL", DEFAULT_PRINCIPAL)
    os.environ.setdefault("APPROVER_PRINCIPALS", default)  # (locally you are an approver)
    try:
        # What every handler reads: a bad setting (a rule) stops here, named. (The embedded AWS makes the
        # decision-link key that DECISION_LINKS_AS needs, below.)
        configured = Settings.from_env(os.environ | {"DECISION_LINKS_KEY": "made-by-make-run"})
    except ValueError as error:
        sys.exit(f"make run: {error}")
    for rule in configured.approval_rules:
        print(f"approval rule {_said(rule)}", flush=True)
    with ExitStack() as stack:
        app, layout = _application(stack)
        settings = stack.enter_context(embedded_aws())
        # (before the handlers are imported: each checks its settings then, the decision-link key too)
        os.environ.update(settings.environment() | _app_values(app, layout, settings))
        stack.enter_context(functions_in_process())
        os.environ.setdefault("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        machine = create_state_machine(settings)
        credentials, verifier = None, None
        if auth == "jwt":
            issuer = LocalIssuer().start()
            stack.callback(issuer.stop)
            os.environ.update(
                AUTH_MODE="JWT",
                JWT_ISSUER=issuer.url,
                JWT_AUDIENCE=issuer.client_id,
                APPROVER_GROUPS="approvers",
                JWT_GROUPS_CLAIM=GROUPS_CLAIM,
            )
            verifier = JwtVerifier(issuer.url, (issuer.client_id,))
            walkthrough = JWT_WALKTHROUGH.replace("@ISSUER", issuer.url)
        else:
            credentials = _local_credentials(default)
            walkthrough = WALKTHROUGH + IAM_SIGN_IN.replace("@CREDENTIALS", str(CREDENTIALS))
        server = _listen(port, credentials, verifier)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        os.environ["API_URL"] = url  # the answer links in events
        stack.callback(_said_where(url))
        with publishing(settings) as (resources, _), running_schedules():
            slack = stack.enter_context(
                slack_locally(settings, f"{url}/slack/interactions", default, int(os.environ.get("SLACK_PORT", "0")))
            )
            os.environ.update(slack.environment)  # (the Slack function's, as the template sets them)
            execution = machine.replace(":stateMachine:", ":execution:") + ":wf-1"
            walkthrough = (
                walkthrough.replace("@SLACK_CHANNEL", SLACK_CHANNEL)
                .replace("@SLACK_USER", SLACK_USER)
                .replace("@SLACK", slack.stand_in.url.removesuffix("/api/"))
                .replace("@URL", url)
                .replace("@AWS", str(settings.endpoint_url))
                .replace("@MACHINE", machine)
                .replace("@EXECUTION", execution)
                .replace("@PYTHON", sys.executable)
                .replace("@QUEUE", resources.events_queue_url)
            )
            if configured.decision_links_as:
                print(
                    f"DECISION_LINKS_AS={configured.decision_links_as}: the e-mail of every approval carries a "
                    "one-click decision link (never the bus's events). Read the mail NotifyEmail would get with:\n"
                    f"  {sys.executable} -m resumable.local.events --mail {resources.mail_queue_url}\n"
                    "(docs/desk.md#e-mail)\n",
                    flush=True,
                )
            _say_whose_agents(app)
            print(walkthrough, flush=True)
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                print("\nstopping: the embedded AWS and everything in it go away", file=sys.stderr)
            finally:
                server.server_close()


if __name__ == "__main__":
    main()
