"""``resumable admin``: the operator's commands, as docs/runbook.md uses them.

``stuck``, ``inspect``, ``recover`` and ``republish`` call the API's /admin routes (approvers only);
``audit`` exports the audit trail (GET /audit, every page) as JSON lines or a table.
``dead-letters`` reads a dead-letter queue itself, with the caller's AWS credentials, says what each
message is and the command that deals with it, and with ``--redrive`` runs that command and deletes
each message it dealt with.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any
from urllib.parse import urlencode, urlsplit

from resumable.cli.client import Api, Reply, part


def add_commands(commands: Any) -> None:
    admin = commands.add_parser("admin", help="the operator's commands (docs/runbook.md)")
    verbs = admin.add_subparsers(dest="verb", required=True, metavar="VERB")
    stuck = verbs.add_parser("stuck", help="turns the sweeper gave up on, then turns stalled now")
    stuck.add_argument("--limit", type=int, default=50, help="at most this many of each (1 to 50)")
    inspect = verbs.add_parser("inspect", help="a turn's records: turns, interactions, journal, outbox, snapshots")
    inspect.add_argument("session"), inspect.add_argument("turn")
    recover = verbs.add_parser("recover", help="move a turn on now, as the sweeper would (safe at any time)")
    recover.add_argument("session"), recover.add_argument("turn")
    republish = verbs.add_parser("republish", help="give the publisher a session's unpublished events again")
    republish.add_argument("session")
    audit = verbs.add_parser("audit", help="export the audit trail: every vote, decision and action's outcome")
    audit.add_argument("--since", help="from this ISO 8601 date or time, e.g. 2026-01-01 (default: 7 days ago)")
    audit.add_argument("--until", help="before this ISO 8601 date or time (default: now)")
    audit.add_argument("--principal", help="only records this principal answered, or voted in")
    audit.add_argument("--tool", help="only records of tools matching this pattern ('*' wildcards)")
    audit.add_argument("--outcome", choices=AUDIT_OUTCOMES, help="only records with this outcome")
    audit.add_argument("--format", choices=["table", "jsonl"], default="table", help="jsonl: one record per line")
    audit.add_argument(
        "check",
        nargs="?",
        choices=["verify"],
        help="verify: check the delivered trail against its signed, chained digests (--from, --to), naming "
        "the first record changed, deleted or inserted (exit 1 if any)",
    )
    audit.add_argument(
        "--from",
        dest="since_",
        metavar="FROM",
        help="verify: from this ISO 8601 date or time (default: 24 hours before --to)",
    )
    audit.add_argument("--to", dest="until_", metavar="TO", help="verify: to this ISO 8601 date or time (default now)")
    audit.add_argument(
        "--check-separation",
        action="store_true",
        help="list every approved call whose approvers include the one who started its turn, from the records "
        "alone (exit 1 if any), and every refused attempt to approve one's own call",
    )
    dead = verbs.add_parser("dead-letters", help="what a dead-letter queue holds, and what deals with each message")
    dead.add_argument("queue_url", metavar="QUEUE_URL", help="the queue (stack outputs *DeadLetterQueueUrl)")
    dead.add_argument("--redrive", action="store_true", help="deal with each message, then delete it")


def call(api: Api, options: argparse.Namespace) -> Reply:
    """The API call of ``stuck``, ``inspect``, ``recover`` or ``republish``."""
    if options.verb == "stuck":
        return api.call("GET", f"/admin/stuck?limit={options.limit}")
    if options.verb == "republish":
        return api.call("POST", f"/admin/sessions/{part(options.session)}/republish")
    turn = f"/admin/sessions/{part(options.session)}/turns/{part(options.turn)}"
    return api.call("POST", f"{turn}/recover") if options.verb == "recover" else api.call("GET", turn)


def show(options: argparse.Namespace, body: dict[str, Any], table: Any, print_turn: Any) -> None:
    """Print a reply of ``call`` as a person reads it."""
    if options.verb == "stuck":
        rows = [
            [t["sessionId"], t["turnId"], t["status"], t.get("why") or "-", "yes" if t["stuck"] else "no",
             str(t["sweeps"]), t.get("dueAt") or "-", (t.get("error") or "")[:60]]
            for t in body.get("turns", [])
        ]  # fmt: skip
        if not rows:
            print("no turn is stalled or stuck")
            return
        print(table(rows, ["SESSION", "TURN", "STATUS", "WHY", "STUCK", "SWEEPS", "DUE", "ERROR"]))
    elif options.verb == "republish":
        print(f"session {body['sessionId']}: {body['republished']} unpublished event(s) given to the publisher again")
    elif options.verb == "recover":
        print_turn(body)
    else:
        _print_records(body, table)


def _print_records(body: dict[str, Any], table: Any) -> None:
    turns = [
        [t["turn_id"], t["status"], str(t.get("version", "")), t.get("lease_owner") or "-",
         str(t.get("lease_expires_at") or "-"), str(t.get("sweeps", 0)), (t.get("error") or "")[:60]]
        for t in body["turns"]
    ]  # fmt: skip
    print(table(turns, ["TURN", "STATUS", "VERSION", "LEASE OWNER", "LEASE EXPIRES", "SWEEPS", "ERROR"]))
    index = body.get("index")
    print(f"\nsweeper's index: {index['partition']}, due {index['dueAt']}" if index else "\nsweeper's index: not in it")
    if body["interactions"]:
        rows = [[i["request_id"], i["status"], i["name"], i.get("answered_by") or "-"] for i in body["interactions"]]
        print("\n" + table(rows, ["REQUEST", "STATUS", "NAME", "ANSWERED BY"]))
    if body["journal"]:
        rows = [
            [a.get("tool", ""), a["status"], str(a.get("lease_generation", "")), "late" if a.get("late") else "",
             "unknown" if a.get("outcome_unknown_at") else ""]
            for a in body["journal"]
        ]  # fmt: skip
        print("\n" + table(rows, ["JOURNAL: TOOL", "STATUS", "LEASE GEN", "LATE", "OUTCOME"]))
    if body["outbox"]:
        rows = [
            [e["type"], str(e.get("sequence") or "-"), "published" if e["published"] else "unpublished", e["sk"]]
            for e in body["outbox"]
        ]
        print("\n" + table(rows, ["OUTBOX: EVENT", "SEQUENCE", "STATE", "KEY"]))
    if body["snapshots"]:
        rows = [[s["key"], ", ".join(s["pointedAtBy"]), s["state"][:80]] for s in body["snapshots"]]
        print("\n" + table(rows, ["SNAPSHOT", "POINTED AT BY", "STATE"]))


AUDIT_OUTCOMES = ["voted", "approved", "denied", "ran", "failed", "unknown", "not_run", "refused"]


def audit(api: Api, options: argparse.Namespace, exit_codes: dict[int, int], table: Any) -> int:
    """Write every record of the audit trail the query finds, oldest first, following the pages to the
    end: each as a line of JSON as it comes (``--format jsonl``), or a table once all are read. What
    was written, and why it stopped, go to stderr."""
    if options.since_ or options.until_:
        raise ValueError(
            "--from and --to are resumable admin audit verify's: add verify, or give the export --since and --until"
        )
    if options.check_separation and (options.principal or options.tool or options.outcome):
        raise ValueError(
            "--check-separation reads every record of the range: it takes no --principal, --tool or --outcome "
            "(a filter would leave out what it checks, and pass)"
        )
    query = {"since": options.since, "until": options.until, "principal": options.principal}
    query |= {"tool": options.tool, "outcome": options.outcome, "limit": "500"}
    asked = {name: value for name, value in query.items() if value is not None}
    rows: list[list[str]] = []
    kept: list[dict[str, Any]] = []
    written, cursor, span = 0, None, ""
    while True:
        reply = api.call("GET", "/audit?" + urlencode(asked | ({"cursor": cursor} if cursor else {})))
        if reply.status >= 300:
            body = reply.body if isinstance(reply.body, dict) else {}
            code = body.get("code") or {401: "unauthorized", 403: "forbidden"}.get(reply.status, "error")
            print(f"{reply.status} {code}: {body.get('message')}", file=sys.stderr)
            if written:
                print(f"resumable: {written} audit records were written before it stopped", file=sys.stderr)
            return exit_codes.get(reply.status, 1)
        span = f"from {reply.body['since']} to {reply.body['until']}"
        for record in reply.body["records"]:
            if options.check_separation:
                kept.append(record)
            elif options.format == "jsonl":
                print(json.dumps(record, ensure_ascii=False))
            else:
                rows.append(_audit_row(record))
            written += 1
        cursor = reply.body.get("cursor")
        if cursor is None:
            break
    if options.check_separation:
        return _separation(kept, options.format, table, span)
    said = f"{written} audit record{'' if written == 1 else 's'} {span}"
    if options.format == "table":
        # (a table says how many it shows below it; none, it says so instead)
        print(table(rows, ["AT", "OUTCOME", "TOOL", "BY", "HOW", "SESSION", "QUESTION", "DETAIL"]) if rows else said)
    if rows or options.format == "jsonl":
        print(said, file=sys.stderr)
    return 0


def _approvers(record: dict[str, Any]) -> set[str]:
    if record["kind"] == "action":
        return {record["grant"]["by"]}
    return {record.get("by"), *(v["by"] for v in record["votes"])}


def _separation(records: list[dict[str, Any]], form: str, table: Any, span: str) -> int:
    """Separation of duties, from the records alone: every approved call one of whose approvers (a vote
    that counted, the settling answer, or the grantor of the standing grant that approved it without a
    question) started its turn, and every refused attempt to approve one's own call. Exit 1 when an
    approved call is listed."""
    decisions = [r for r in records if r["kind"] == "decision" and r["outcome"] == "approved"]
    decisions += [r for r in records if r["kind"] == "action" and (r.get("grant") or {}).get("by")]  # (granted)
    own = [r for r in decisions if r.get("startedBy") in _approvers(r)]
    unknown = [r for r in decisions if not r.get("startedBy")]
    tried = [r for r in records if r["kind"] == "refused" and r.get("refusal") == "self_approval"]
    if form == "jsonl":  # (each flagged approval, then each refused attempt: their kind tells them apart)
        for record in [*own, *tried]:
            print(json.dumps(record, ensure_ascii=False))
    elif own:
        rows = [
            [r["at"], r.get("tool") or "-", r.get("rule") or "-", r["startedBy"], r["sessionId"], r["requestId"]]
            for r in own
        ]
        print(table(rows, ["AT", "TOOL", "RULE", "STARTED BY, AND APPROVED", "SESSION", "QUESTION"]))
    if tried and form != "jsonl":
        rows = [
            [r["at"], r.get("tool") or "-", r.get("rule") or "-", r.get("by") or "-", r["requestId"]] for r in tried
        ]
        print(table(rows, ["AT", "TOOL", "RULE", "TRIED TO APPROVE THEIR OWN CALL (REFUSED)", "QUESTION"]))
    print(
        f"{len(decisions)} approved call{'' if len(decisions) == 1 else 's'} checked {span}: {len(own)} approved by "
        f"the one who started its turn; {len(tried)} refused attempt{'' if len(tried) == 1 else 's'} to approve "
        f"one's own call"
        + (
            f"; {len(unknown)} without startedBy (written before it was kept, or of a session the application "
            "started with no principal): not checked"
            if unknown
            else ""
        ),
        file=sys.stderr,
    )
    return 1 if own else 0


def _audit_row(record: dict[str, Any]) -> list[str]:
    how = record.get("authentication") or {}
    detail = (
        [f"{len(record['votes'])} approvals: {', '.join(v['by'] for v in record['votes'])}"] if record["votes"] else []
    )
    detail += [f"message: {record['message']}"] if record.get("message") else []
    detail += ["late"] if record.get("late") else []
    detail += [f"refused: {record['refusal']}"] if record.get("refusal") else []
    return [
        record["at"], record["outcome"], record.get("tool") or "-", record.get("by") or "-", how.get("method", "-"),
        record["sessionId"], record["requestId"], "; ".join(detail)[:80],
    ]  # fmt: skip


def dead_letters(api: Api, options: argparse.Namespace) -> int:
    """List (and with ``--redrive``, deal with) the messages of a dead-letter queue. Exit 0 when every
    message was listed (or, redriving, dealt with); 1 when some were left, or the queue could not be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    parts = urlsplit(options.queue_url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.count("/") < 2:
        raise ValueError(
            f"{options.queue_url!r} is not a queue's URL, such as https://sqs.REGION.amazonaws.com/ACCOUNT/NAME "
            "(the stack's outputs name them: ContinuationDeadLetterQueueUrl, PublisherDeadLetterQueueUrl)"
        )
    sqs = _client("sqs", options.queue_url, options.region)
    tally = {"seen": 0, "handled": 0}
    kept: list[str] = []  # the receipts of the messages left: visible again once all were read
    try:
        _read_dead_letters(api, options, sqs, tally, kept)
    except (BotoCoreError, ClientError) as error:
        print(
            f"resumable: the queue could not be read or changed: {error}; before that, {tally['seen']} message(s) "
            f"were read and {tally['handled']} dealt with and deleted",
            file=sys.stderr,
        )
        return 1
    finally:
        for receipt in kept:  # (one that fails becomes visible again by itself when its timeout ends)
            with contextlib.suppress(BotoCoreError, ClientError):
                sqs.change_message_visibility(QueueUrl=options.queue_url, ReceiptHandle=receipt, VisibilityTimeout=0)
    print(f"{tally['seen']} message(s): {tally['handled']} dealt with and deleted, {len(kept)} left in the queue")
    return 1 if options.redrive and kept else 0


# How long a message read here stays invisible to others: longer than a recover can take.
_VISIBILITY_SECONDS = 300


def _read_dead_letters(api: Api, options: argparse.Namespace, sqs: Any, tally: dict[str, int], kept: list[str]) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    seen: set[str] = set()
    while True:
        # (A wait makes it a long poll, which asks every server of the queue: a short poll samples some
        # and can answer "none" while messages wait. Any wait does; on an empty queue it is the last read's.)
        reply = sqs.receive_message(
            QueueUrl=options.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=_VISIBILITY_SECONDS, WaitTimeSeconds=1
        )
        messages = [m for m in reply.get("Messages", []) if m["MessageId"] not in seen]
        if not messages:
            return
        for message in messages:
            seen.add(message["MessageId"])
            tally["seen"] += 1
            try:
                what, fix = _what(_body(message["Body"]), options.queue_url, options.region)
            except (BotoCoreError, ClientError, KeyError, TypeError, ValueError) as error:
                what, fix = f"a message resumable could not make out ({error}): {message['Body'][:200]}", None
            print(f"{message['MessageId']}  {what}")
            if fix is None:
                print("    left: nothing resumable can redrive (docs/runbook.md: messages in a dead-letter queue)")
                kept.append(message["ReceiptHandle"])
                continue
            print(f"    deal with it: resumable admin {' '.join(fix)}")
            if not options.redrive:
                kept.append(message["ReceiptHandle"])
                continue
            done = api.call("POST", _fix_path(fix))
            if done.status >= 300:
                print(f"    not done ({done.status}): {done.body}; the message is kept")
                kept.append(message["ReceiptHandle"])
                continue
            sqs.delete_message(QueueUrl=options.queue_url, ReceiptHandle=message["ReceiptHandle"])
            print("    done; the message is deleted")
            tally["handled"] += 1


def _body(raw: str) -> dict[str, Any]:
    """A message's body as JSON (anything else: nothing resumable knows)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return {"unreadable": raw[:200]}
    return body if isinstance(body, dict) else {"unreadable": raw[:200]}


def _fix_path(fix: list[str]) -> str:
    if fix[0] == "recover":
        return f"/admin/sessions/{part(fix[1])}/turns/{part(fix[2])}/recover"
    return f"/admin/sessions/{part(fix[1])}/republish"


def _what(body: dict[str, Any], queue_url: str, region: str | None) -> tuple[str, list[str] | None]:
    """What a dead letter is, and the admin command that deals with it (None: nothing can)."""
    payload = body.get("requestPayload")
    if isinstance(payload, dict) and isinstance(payload.get("continueTurn"), dict):
        target = payload["continueTurn"]
        condition = body.get("requestContext", {}).get("condition", "failed")
        what = f"a continuation of turn {target.get('turnId')} in session {target.get('sessionId')} ({condition})"
        return what, ["recover", str(target.get("sessionId")), str(target.get("turnId"))]
    if "record" in body:
        keys = body["record"].get("dynamodb", {}).get("Keys", {})
        return f"an outbox record that can never be published ({body.get('reason')}): {keys}", None
    batch = body.get("DDBStreamBatchInfo")
    if isinstance(batch, dict):
        sessions = _sessions_in(batch, queue_url, region)
        if sessions is not None and len(sessions) == 1:
            [session] = sessions
            return f"a batch of session {session}'s events the publisher gave up on", ["republish", session]
        if sessions == set():
            return "a batch the publisher gave up on that holds no session's records: nothing to republish", None
        if sessions is None:
            return (
                "a batch the publisher gave up on, whose records the stream no longer holds (it keeps them 24 "
                "hours): find its sessions' unpublished events with resumable admin inspect, then resumable admin "
                "republish SESSION",
                None,
            )
        return f"a batch the publisher gave up on, of sessions {sorted(sessions)}: resumable admin republish each", None
    return f"a message resumable does not know: {json.dumps(body)[:200]}", None


def _sessions_in(batch: dict[str, Any], queue_url: str, region: str | None) -> set[str] | None:
    """The sessions whose outbox items (``store.outbox.outbox_session``) a stream batch's range holds, read
    to its last record (the stream keeps them 24 hours; None: no longer): the range holds every write
    between the records the mapping's filter let through, the turns', the audit trail's, ..."""
    from resumable.store.outbox import outbox_session

    streams = _client("dynamodbstreams", queue_url, region)
    iterator = streams.get_shard_iterator(
        StreamArn=batch["streamArn"],
        ShardId=batch["shardId"],
        ShardIteratorType="AT_SEQUENCE_NUMBER",
        SequenceNumber=batch["startSequenceNumber"],
    )["ShardIterator"]
    sessions, read_any = set[str](), False
    for _ in range(100):  # (pages of up to 1,000 records or 1 MB each)
        page = streams.get_records(ShardIterator=iterator, Limit=1000)
        for record in page["Records"]:
            read_any, keys = True, record["dynamodb"]["Keys"]
            if (session := outbox_session(keys["pk"]["S"], keys.get("sk", {}).get("S", ""))) is not None:
                sessions.add(session)
            if record["dynamodb"]["SequenceNumber"] == batch["endSequenceNumber"]:
                return sessions
        iterator = page.get("NextShardIterator")
        if not iterator or (read_any and not page["Records"]):  # (the shard closed, or read to its end)
            break
    return sessions if read_any else None


def _client(service: str, queue_url: str, region: str | None) -> Any:
    """A client of ``service`` beside the queue: on AWS, in the queue's region, with the caller's
    credentials; for a local queue (make run's embedded AWS), at its endpoint."""
    import boto3

    parts = urlsplit(queue_url)
    make: Any = boto3.client
    if parts.hostname and parts.hostname.endswith("amazonaws.com"):
        return make(service, region_name=region or parts.hostname.split(".")[1])
    return make(
        service,
        region_name=region or "us-east-1",
        endpoint_url=f"{parts.scheme}://{parts.netloc}",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
