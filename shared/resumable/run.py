"""``make run``: the embedded AWS and the local HTTP API on 127.0.0.1:3000, until Ctrl-C.

No Docker and no AWS account: moto serves DynamoDB and S3 on loopback, the table and bucket are
created as template.yaml declares them, and template.yaml's routes call the same handlers Lambda
would. The default agent factory is the offline demo (set ``MODEL_ID`` and AWS credentials to use
Bedrock; set ``AGENT_FACTORY`` to use your own).
"""

from __future__ import annotations

import os
import sys

from resumable.embedded_template import functions_in_process
from resumable.local_server import make_server
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

The OpenAPI document: {url}/openapi.json
"""


def main() -> None:
    port = int(os.environ.get("PORT", "3000"))
    with embedded_aws() as settings, functions_in_process():
        os.environ.update(settings.environment())
        server = make_server(port=port)
        print(WALKTHROUGH.format(url=f"http://127.0.0.1:{server.server_address[1]}"), flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("\nstopping: the embedded AWS and everything in it go away", file=sys.stderr)
        finally:
            server.server_close()


if __name__ == "__main__":
    main()
