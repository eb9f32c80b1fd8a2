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
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

from resumable.config import Settings
from resumable.integrations.durable import START_TURN_FUNCTION
from resumable.local import durable_workflows
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
from resumable.local.server import DEFAULT_PRINCIPAL, LocalServer, make_server, requests_log
from resumable.local.slack import slack_locally
from resumable.local.template import create_state_machine, functions_in_process
from resumable.local.walkthrough import IAM_SIGN_IN, JWT_WALKTHROUGH, WALKTHROUGH, filled, two_person
from resumable.local_runs import note

if TYPE_CHECKING:
    from resumable.runtime.rules import ApprovalRule

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


def _port(variable: str, default: int) -> int:
    """The port ``variable`` names (``default`` when it is unset or empty), or exit saying what is allowed."""
    said = os.environ.get(variable, "").strip()
    if not said:
        return default
    port = int(said) if said.isdigit() else -1
    if not 0 <= port <= 65535:
        sys.exit(
            f"make run: {variable}={said!r} is not a port: give a number from 1 to 65535 ({variable}=3001 make run), "
            "or 0 for any free one"
        )
    return port


def _listen(port: int, credentials: LocalCredentials | None, jwt: JwtVerifier | None) -> LocalServer:
    """The local API's server on ``port``, or exit saying which port is taken and how to pick another."""
    try:
        return make_server(port=port, credentials=credentials, jwt=jwt)
    except OSError as error:
        if error.errno == errno.EACCES:
            sys.exit(f"make run: port {port} is reserved for the system here: pick one above 1023 (PORT=3000)")
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
    if rule.grants is not None:
        said += f"; an approval may grant the tool for up to {rule.grants.max:g} s ({' or '.join(rule.grants.scopes)}"
        said += ", destructive calls too)" if rule.grants.destructive else ")"
    return said + ("; denied at its expiry" if rule.on_expiry == "deny" else "")


def _several_approvers(configured: Settings, auth: str, you: str) -> tuple[str, int, list[str]] | None:
    """Where the deployment's rule for the demo's delete_record needs several approvers (IAM mode: the
    one-approver walkthrough would wait, or be refused, under it): the rule's name, how many it needs,
    and the local approvers besides ``you`` this run adds for it (as APPROVER_PRINCIPALS, unless that
    was set). None where the walkthrough of one approver completes, or the rule names its own approvers."""
    rule = next((r for r in configured.approval_rules if r.matches("delete_record")), None)
    if auth != "iam" or rule is None or rule.required < 2 or rule.approvers is not None:
        if rule is not None and rule.approvers is not None and auth == "iam":
            print(
                f"make run: the approval rule {rule.title!r} names its approvers ({', '.join(rule.approvers)}): the "
                "walkthrough's approvals are yours, so answer as one of them with an x-resumable-principal header "
                "(and add them to APPROVER_PRINCIPALS) where it is refused",
                flush=True,
            )
        return None
    others = [f"arn:aws:iam::000000000000:user/local-approver-{n}" for n in range(2, rule.required + 1)]
    if "APPROVER_PRINCIPALS" in os.environ and os.environ["APPROVER_PRINCIPALS"] != you:
        return None  # (the approvers are yours to name: the walkthrough of one approver, and the rule as set)
    os.environ["APPROVER_PRINCIPALS"] = ",".join([you, *others])
    return rule.title, rule.required, others


def _log_level() -> None:
    """``LOG_LEVEL`` (INFO where unset): at INFO the log says what failed and what was refused; at DEBUG,
    every request and every metric too. Anything else stops the run, saying what is allowed."""
    said = os.environ.get("LOG_LEVEL", "")
    level = said.strip().upper() or "INFO"
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        sys.exit(f"make run: LOG_LEVEL={said!r} is not a level: DEBUG (every request and metric), INFO, WARNING, ERROR")
    os.environ["LOG_LEVEL"] = level  # (the handlers' logger reads it, and Powertools')
    requests_log.setLevel(level)
    if level != "DEBUG":
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # (a line of metrics per request)


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


@contextmanager
def _functions_here() -> Iterator[None]:
    """The template's functions run in this process (a turn's continuations on SubmitApproval), and the
    sample durable workflow (walkthrough step 9) by the durable execution SDK's local runner, starting
    its turns on the StartTurn function run here."""
    os.environ.setdefault("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
    os.environ.setdefault(START_TURN_FUNCTION, function_arn("StartTurnFunction"))
    with functions_in_process(), durable_workflows.running():
        yield


def main() -> None:
    _stop_on_sigterm()
    _log_level()
    port = _port("PORT", 3000)
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
    several = _several_approvers(configured, auth, default)
    with ExitStack() as stack:
        app, layout = _application(stack)
        settings = stack.enter_context(embedded_aws())
        # (before the handlers are imported: each checks its settings then, the decision-link key too)
        os.environ.update(settings.environment() | _app_values(app, layout, settings))
        stack.enter_context(_functions_here())
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
        else:  # (under a rule of several approvers, the one-approver walkthrough would wait, or be refused)
            credentials = _local_credentials(default)
            walkthrough = (
                two_person(*several) if several else WALKTHROUGH + IAM_SIGN_IN.replace("@CREDENTIALS", str(CREDENTIALS))
            )
        server = _listen(port, credentials, verifier)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        os.environ["API_URL"] = url  # the answer links in events
        with publishing(settings) as (resources, _), running_schedules():
            stack.callback(note(url, resources.events_queue_url))  # (where the resumable command looks)
            slack = stack.enter_context(
                slack_locally(settings, f"{url}/slack/interactions", default, _port("SLACK_PORT", 0))
            )
            os.environ.update(slack.environment)  # (the Slack function's, as the template sets them)
            walkthrough = filled(
                walkthrough,
                url=url,
                aws=str(settings.endpoint_url),
                machine=machine,
                slack=slack.stand_in.url.removesuffix("/api/"),
                queue=resources.events_queue_url,
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
