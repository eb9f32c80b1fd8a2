"""What ``make run`` prints for a newcomer to paste: the walkthrough of each way of signing in, filled
in with where this run serves."""

from __future__ import annotations

import sys
from pathlib import Path

from resumable.local.slack import CHANNEL as SLACK_CHANNEL
from resumable.local.slack import USER as SLACK_USER

# Every line of the walkthrough runs as printed, in order, in bash with curl >= 7.82 (tests/e2e follow it).
# @URL, @AWS, @MACHINE, @SLACK (the Slack stand-in), @QUEUE and the command's place are filled in; the
# embedded AWS takes any signature (the Authorization header only names the service a request is for).
WALKTHROUGH = r"""resumable is serving @URL  (Ctrl-C stops it and forgets everything: the embedded AWS is in memory)

Paste these into another terminal, in order (bash, curl 7.82 or newer for --json, python3):

  field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }    # one field of a JSON reply
  wait_for() { for _ in $(seq 150); do eval "$1" && return 0; sleep 0.2; done
       echo "waited 30 s for $2 in vain: is make run still serving? Its terminal says what failed" >&2; return 1; }

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
       --json '{"response": {"decision": "deny", "message": "not staging"}}'; echo
      # 200 "status": "completed", "output": "DENIED: not staging. The tool 'delete_record' did not run."

4. Cancel one instead: the turn and its child turn settle canceled; the question is withdrawn.
  T=$(curl -s -X POST @URL/sessions/demo-cancel/turns --json '{"prompt": "delete the test-db record"}')
  TURN=$(echo "$T" | field '["turnId"]')
  curl -s -X POST @URL/sessions/demo-cancel/turns/$TURN/cancel; echo      # 200 "status": "canceled"

5. A Step Functions workflow that waits for the approval (the embedded AWS runs the state machine; each
paste starts a new one, WF, with a session of its own):
  sfn() { curl -s @AWS -H "X-Amz-Target: AWSStepFunctions.$1" -H 'Content-Type: application/x-amz-json-1.0' \
       -H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/states/aws4_request, Signature=x' \
       -d "$2"; echo; }
  WF=wf-$RANDOM$RANDOM; X=$(sfn StartExecution '{"stateMachineArn": "@MACHINE", "name": "'$WF'",
       "input": "{\"sessionId\": \"'$WF'\", \"prompt\": \"delete the dev-db record\"}"}'); echo "$X"
  EXECUTION=$(echo "$X" | field '["executionArn"]'); Q=
  wait_for 'Q=$(curl -sf "@URL/sessions/$WF/interactions?status=requested") && [[ $Q == *requestId* ]]' "its question"
  TURN=$(echo "$Q" | field '["interactions"][0]["turnId"]'); REQ=$(echo "$Q" | field '["interactions"][0]["requestId"]')
  curl -s -X POST @URL/sessions/$WF/turns/$TURN/interactions/$REQ --json '{"response": {"decision": "approve"}}'; echo
  wait_for '[[ $(sfn DescribeExecution "{\"executionArn\": \"$EXECUTION\"}") != *\"RUNNING\"* ]]' "it to finish"
  sfn DescribeExecution '{"executionArn": "'$EXECUTION'"}'      # "status": "SUCCEEDED", the completed Turn as output

6. Everything above was published as it happened: the Publisher reads the table's stream as Lambda would,
and puts each event on the embedded EventBridge bus; a rule copies every event to a queue. Read it (each
event once; --follow keeps reading, --json prints each event whole):
  @RESUMABLE events --once --queue @QUEUE      # (in a shell of your own, resumable events finds it by itself)
      # demo  #1  Interaction Requested  orchestrator -> db_admin wants to run delete_record {"name": "prod-db"}

7. Who decided what, when and how they proved it: the audit trail (approvers; docs/audit.md).
  curl -s '@URL/audit?outcome=denied'; echo      # the deny of step 3: who, how signed in, the message, input digests
  @RESUMABLE --url @URL admin audit      # every vote, decision and action's outcome, as a table

8. Answer from Slack: the Slack function posts every question to @SLACK_CHANNEL on a Slack stand-in (@SLACK
plays Slack's Web API, and you at the Slack client: it signs each press as Slack does; docs/desk.md).
  T=$(curl -s -X POST @URL/sessions/demo-slack/turns --json '{"prompt": "delete the qa-db record"}')
  REQ=$(echo "$T" | field '["interactions"][0]["requestId"]')
  wait_for '[[ $(curl -s "@SLACK/local/messages?request=$REQ") == *approve* ]]' "the question's Slack message"
  curl -s "@SLACK/local/messages?request=$REQ"; echo      # the question's message, with its buttons approve, deny
  curl -s -X POST @SLACK/local/press --json '{"request": "'"$REQ"'", "button": "approve", "user": "@SLACK_USER"}'; echo
      # delete_record is destructive: Slack asks first ("Run it? Approving runs delete_record ..."), nothing sent
  curl -s -X POST @SLACK/local/press \
    --json '{"request": "'"$REQ"'", "button": "approve", "user": "@SLACK_USER", "confirm": true}'; echo
  wait_for '[[ $(curl -s "@SLACK/local/messages?request=$REQ") == *Approved* ]]' "the message's update"
  curl -s "@SLACK/local/messages?request=$REQ"; echo      # updated in place: "Approved by ... UTC", no buttons

9. A Lambda durable function that waits for the approval: the sample durable workflow
(workflows/durable_approval/app.py, run by the durable execution SDK's local runner) starts a turn with
wait_for_turn, waits without running until it settles, and goes on with its outcome. Each paste starts
a new execution, DF, with a session of its own; approve it here or on the page (@URL/inbox):
  SIG='Authorization: AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/lambda/aws4_request, Signature=x'
  lam() { curl -s "@AWS$1" -H "$SIG" "${@:2}"; }      # Lambda's API, as the AWS CLI would call it
  DF=df-$RANDOM$RANDOM; DURABLE=$(lam /2015-03-31/functions/ApprovalDurableFunction:live/invocations \
       -H 'X-Amz-Invocation-Type: Event' -H "X-Amz-Durable-Execution-Name: $DF" -D - -o /dev/null \
       --json '{"sessionId": "'$DF'", "prompt": "delete the test-db record"}' \
       | tr -d '\r' | sed -n 's/^x-amz-durable-execution-arn: //Ip'); echo "$DURABLE"      # its execution
  EXECUTION=/2025-12-01/durable-executions/$(python3 -c \
       'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$DURABLE")
  wait_for 'Q=$(curl -sf "@URL/sessions/$DF/interactions?status=requested") && [[ $Q == *requestId* ]]' "its question"
  TURN=$(echo "$Q" | field '["interactions"][0]["turnId"]'); REQ=$(echo "$Q" | field '["interactions"][0]["requestId"]')
  curl -s -X POST @URL/sessions/$DF/turns/$TURN/interactions/$REQ --json '{"response": {"decision": "approve"}}'; echo
  wait_for '[[ $(lam "$EXECUTION") != *\"RUNNING\"* ]]' "the workflow to finish"
  lam "$EXECUTION"; echo      # "Status": "SUCCEEDED", its "Result": "completed", "record test-db deleted"
      # (pasted again: "there is no record named test-db", the demo's records are gone by then)

The resumable command (docs/desk.md) is @RESUMABLE: put its folder on your PATH to call it by name. It
finds this run by itself; RESUMABLE_URL names the one it calls where several serve:
  export PATH="@BIN:$PATH"
  export RESUMABLE_URL=@URL
  resumable inbox      # the questions waiting for you, most urgent first

The OpenAPI document: @URL/openapi.json
"""

# What make run prints instead of WALKTHROUGH (IAM mode) under an approval rule that needs several approvers
# for delete_record: the one-approver walkthrough would wait, or be refused, under it. @RULE, @REQUIRED,
# @OTHERS and @APPROVALS are filled in (``two_person``).
TWO_PERSON = r"""resumable is serving @URL  (Ctrl-C stops it and forgets everything: the embedded AWS is in memory)

The approval rule @RULE governs delete_record: @REQUIRED approvals from distinct approvers, never the
approval of the one who started the turn. The walkthrough of one approver would wait or be refused
(403) under it: make run without APPROVAL_RULES prints that one. This run has local approvers besides
you for it, @OTHERS: an unsigned request is theirs with its x-resumable-principal header (as it is
bob's, who may answer only his own sessions). Paste these into another terminal, in order:

  field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }    # one field of a JSON reply

1. Ask as bob: the question waits for @REQUIRED approvals (each paste, a session of its own).
  S=two-$RANDOM$RANDOM; BOB='x-resumable-principal: arn:aws:iam::000000000000:user/bob'
  T=$(curl -s -X POST @URL/sessions/$S/turns -H "$BOB" --json '{"prompt": "delete the prod-db record"}'); echo "$T"
  TURN=$(echo "$T" | field '["turnId"]'); REQ=$(echo "$T" | field '["interactions"][0]["requestId"]')
  ANSWER=@URL/sessions/$S/turns/$TURN/interactions/$REQ

2. Approve as you, then as each other local approver: each approval counts once; the last runs
delete_record, once ("record prod-db deleted"; pasted again, "there is no record named prod-db").
@APPROVALS

3. From the trail alone: nobody approved a call of a turn they started.
  @RESUMABLE --url @URL admin audit --check-separation; echo "exit $?"

The OpenAPI document: @URL/openapi.json
"""


def two_person(rule_title: str, required: int, others: list[str]) -> str:
    """``TWO_PERSON`` for a rule of ``required`` approvers: you, then ``others`` (each by its header)."""
    approve = '--json \'{"response": {"decision": "approve"}}\'; echo'
    lines = [f'  curl -s -X POST "$ANSWER" {approve}      # 200 "status": "waiting", your approval 1 of {required}']
    for n, other in enumerate(others, start=2):
        said = "completed" if n == required else f"waiting, {n} of {required}"
        lines.append(
            f'  curl -s -X POST "$ANSWER" -H \'x-resumable-principal: {other}\' {approve}      # 200 "status": "{said}"'
        )
    return (
        TWO_PERSON.replace("@RULE", repr(rule_title))
        .replace("@REQUIRED", str(required))
        .replace("@OTHERS", ", ".join(others))
        .replace("@APPROVALS", "\n".join(lines))
    )


# What the walkthrough adds for each way of signing in. @CREDENTIALS, @ISSUER are filled in.
IAM_SIGN_IN = r"""
The inbox page, to answer in a browser (unsigned requests are you, an approver; delete_record is
destructive, so Approve asks once more, naming the record):
  @URL/inbox

Signed requests mean what they mean on AWS: each profile of @CREDENTIALS signs as its principal_arn
(local: an approver; alice and bob: only their own sessions); a bad signature is a 403.
  export AWS_SHARED_CREDENTIALS_FILE=@CREDENTIALS
  AWS_PROFILE=resumable-alice @RESUMABLE --url @URL --sign inbox
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
  @RESUMABLE events --once

Who decided what, and how each signed in: the page's Audit trail (at its foot, as alice or dave).

The resumable command (@RESUMABLE; export PATH="@BIN:$PATH" to call it by name) finds this run by itself
and takes the same token (RESUMABLE_URL names the run it calls where several serve):
  export RESUMABLE_URL=@URL
  RESUMABLE_TOKEN="$TOKEN" @RESUMABLE inbox
"""


def command() -> str:
    """How to call the resumable command that this interpreter installed (where make installed it)."""
    installed = Path(sys.executable).parent / "resumable"
    return str(installed) if installed.exists() else f"{sys.executable} -m resumable.cli"


def filled(walkthrough: str, *, url: str, aws: str, machine: str, slack: str, queue: str) -> str:
    """``walkthrough`` with this run's places: its API, the embedded AWS, the state machine, the Slack
    stand-in, the event queue, the command and this interpreter."""
    return (
        walkthrough.replace("@SLACK_CHANNEL", SLACK_CHANNEL)
        .replace("@SLACK_USER", SLACK_USER)
        .replace("@SLACK", slack)
        .replace("@URL", url)
        .replace("@AWS", aws)
        .replace("@MACHINE", machine)
        .replace("@RESUMABLE", command())
        .replace("@BIN", str(Path(sys.executable).parent))
        .replace("@PYTHON", sys.executable)
        .replace("@QUEUE", queue)
    )
