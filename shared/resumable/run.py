"""``make run``: the embedded AWS and the local HTTP API on 127.0.0.1:3000, until Ctrl-C.

No Docker and no AWS account: moto serves DynamoDB, S3 and Step Functions on loopback, the table,
bucket and state machine are created as template.yaml declares them, template.yaml's routes call
the same handlers Lambda would, and Lambda invocations (the state machine's, a turn's continuation)
run those handlers in this process. Locally you are an approver principal, so you can answer the
sessions a workflow owns. The default agent factory is the offline demo (set ``MODEL_ID`` and AWS credentials to use
Bedrock; set ``AGENT_FACTORY`` to use your own).
"""

from __future__ import annotations

import errno
import os
import sys

from resumable.embedded_template import create_state_machine, functions_in_process
from resumable.local_server import DEFAULT_PRINCIPAL, LocalServer, function_arn, make_server
from resumable.store.embedded import embedded_aws

WALKTHROUGH = """\
resumable is serving {url}  (Ctrl-C stops it)

Approve a risky step:
  curl -s -X POST {url}/sessions/demo/turns --json '{{"prompt": "delete the prod-db record"}}'
      # -> 201, "status": "waiting", one interaction with its requestId and turnId
  curl -s '{url}/sessions/demo/interactions?status=requested'
  curl -s -X POST {url}/sessions/demo/turns/TURN_ID/interactions/REQUEST_ID \\
       --json '{{"response": {{"decision": "approve"}}}}'
      # -> 200, "status": "completed", "output": "record prod-db deleted"

Or all at once:
  T=$(curl -s -X POST {url}/sessions/demo-2/turns --json '{{"prompt": "delete the staging-db record"}}')
  TURN=$(echo "$T" | python3 -c 'import json,sys; print(json.load(sys.stdin)["turnId"])')
  REQ=$(echo "$T" | python3 -c 'import json,sys; print(json.load(sys.stdin)["interactions"][0]["requestId"])')
  curl -s -X POST {url}/sessions/demo-2/turns/$TURN/interactions/$REQ --json '{{"response": {{"decision": "approve"}}}}'

Cancel instead:
  T=$(curl -s -X POST {url}/sessions/demo-3/turns --json '{{"prompt": "delete the test-db record"}}')
  TURN=$(echo "$T" | python3 -c 'import json,sys; print(json.load(sys.stdin)["turnId"])')
  curl -s -X POST {url}/sessions/demo-3/turns/$TURN/cancel      # -> "status": "canceled"

{workflow}
The OpenAPI document: {url}/openapi.json
"""


# The embedded AWS takes any signature; the Authorization header names the service it is for.
WORKFLOW = r"""Let a Step Functions workflow wait for the approval (the embedded AWS runs the state machine):
  sfn() { curl -s @AWS -H "X-Amz-Target: AWSStepFunctions.$1" -H 'Content-Type: application/x-amz-json-1.0' \
       -H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/states/aws4_request, Signature=x' \
       -d "$2"; echo; }
  sfn StartExecution '{"stateMachineArn": "@MACHINE", "name": "wf-1",
       "input": "{\"sessionId\": \"wf-1\", \"prompt\": \"delete the staging-db record\"}"}'
  curl -s '@URL/sessions/wf-1/interactions?status=requested'    # the workflow owns the session: approve it
  curl -s -X POST @URL/sessions/wf-1/turns/TURN_ID/interactions/REQUEST_ID \
       --json '{"response": {"decision": "approve"}}'
  sfn DescribeExecution '{"executionArn": "@EXECUTION"}'    # -> "status": "SUCCEEDED", the Turn as output
"""


def _listen(port: int) -> LocalServer:
    """The local API's server on ``port``, or exit saying which port is taken and how to pick another."""
    try:
        return make_server(port=port)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        sys.exit(
            f"make run: port {port} on 127.0.0.1 is already in use (another make run?). Stop what uses it, "
            f"or pick another port: PORT={port + 1} make run"
        )


def main() -> None:
    port = int(os.environ.get("PORT", "3000"))
    with embedded_aws() as settings, functions_in_process():
        os.environ.update(settings.environment())
        os.environ.setdefault("APPROVER_PRINCIPALS", os.environ.get("RESUMABLE_LOCAL_PRINCIPAL", DEFAULT_PRINCIPAL))
        os.environ.setdefault("CONTINUE_FUNCTION", function_arn("SubmitApprovalFunction"))
        machine = create_state_machine(settings)
        server = _listen(port)
        url = f"http://127.0.0.1:{server.server_address[1]}"
        execution = machine.replace(":stateMachine:", ":execution:") + ":wf-1"
        workflow = (
            WORKFLOW.replace("@AWS", str(settings.endpoint_url))
            .replace("@MACHINE", machine)
            .replace("@EXECUTION", execution)
            .replace("@URL", url)
        )
        print(WALKTHROUGH.format(url=url, workflow=workflow), flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("\nstopping: the embedded AWS and everything in it go away", file=sys.stderr)
        finally:
            server.server_close()


if __name__ == "__main__":
    main()
