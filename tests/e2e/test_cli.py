"""The ``resumable`` command against the local run: the inbox, approve, deny, start, cancel and show,
signed with SigV4 like a client of an IAM API, with exit codes a script can tell apart."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from resumable.local.lag import lagging
from tests.e2e.local_api import APPROVER, call, cli, settings
from tests.patience import HANG_SECONDS

_CREDENTIALS: list[Path] = []


@pytest.fixture(autouse=True, scope="module")
def _signers(local_credentials: Path) -> None:
    _CREDENTIALS[:] = [local_credentials]


def resumable(url: str, *args: str, profile: str = "alice") -> subprocess.CompletedProcess[str]:
    """The command, signing as ``profile`` of the local credentials (the standard credential chain)."""
    return cli(url, _CREDENTIALS[0], *args, profile=profile)


def test_the_console_script_is_installed_with_the_package() -> None:
    script = Path(sys.executable).parent / "resumable"
    ran = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=HANG_SECONDS, check=False)
    assert ran.returncode == 0 and "approve" in ran.stdout


def test_start_list_approve_and_the_exit_codes_of_what_did_not_happen(url: str) -> None:
    started = resumable(url, "--json", "start", "cli-a", "delete the prod-db record", "--wait")
    assert started.returncode == 0, started.stderr
    turn = json.loads(started.stdout)
    assert turn["status"] == "waiting"
    request = turn["interactions"][0]["requestId"]

    listed = resumable(url, "inbox")
    assert listed.returncode == 0
    # One row per question (what it asks, its risk, for whom), then its context, ids last.
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["REQUEST", "RISK", "ASKS", "FOR", "EXPIRES", "IN"]
    at = next(n for n, line in enumerate(lines) if line.startswith(request))
    assert "destructive" in lines[at] and "delete_record prod-db" in lines[at] and "user/alice" in lines[at]
    context = lines[at + 1 : at + 6]
    assert context[0].strip() == "impact: Deletes the named record for good: there is no undo"
    assert context[1].strip().startswith("why: You asked me to delete the record prod-db")
    assert context[2].strip() == "prompt: delete the prod-db record"
    assert context[3].strip() == 'input: delete_record {"name": "prod-db"}'
    assert context[4].split() == [
        "session",
        "cli-a",
        "turn",
        turn["turnId"],
        "agents",
        "orchestrator",
        "->",
        "db_admin",
    ]

    edited = resumable(url, "approve", "--yes", "cli-a", turn["turnId"], request, "--input", '{"name": "x"}')
    assert (edited.returncode, "may not be edited" in edited.stderr) == (2, True), edited.stderr
    assert "nothing was sent" in edited.stderr  # (the question says it takes no edit: refused here)
    assert resumable(url, "approve", "--yes", "cli-a", turn["turnId"], request, "--input", "{not json").returncode == 2

    # A destructive question needs a confirmation: without a terminal, --yes; else nothing is sent.
    unconfirmed = resumable(url, "approve", request)
    assert unconfirmed.returncode == 2 and "delete_record prod-db" in unconfirmed.stderr
    assert "pass --yes" in unconfirmed.stderr and "nothing was sent" in unconfirmed.stderr
    assert request in resumable(url, "inbox").stdout

    approved = resumable(url, "approve", "--yes", request)  # the request id alone: the CLI finds the rest
    assert approved.returncode == 0, approved.stderr
    assert "completed" in approved.stdout and "output: record prod-db deleted" in approved.stdout
    conflict = resumable(url, "deny", "cli-a", turn["turnId"], request, "--message", "no")
    assert conflict.returncode == 4 and "409 conflict: you already answered" in conflict.stderr
    assert "(from the CLI at " in conflict.stderr
    assert resumable(url, "show", "cli-a", "0" * 32).returncode == 3
    shown = resumable(url, "show", "cli-a", turn["turnId"])
    assert shown.returncode == 0 and "completed" in shown.stdout
    [row] = [r for r in shown.stdout.splitlines() if r.startswith(request)]
    assert row.split()[1] == "approved"
    assert "child turns:" in shown.stdout and "db_admin" in shown.stdout.split("child turns:")[1]
    # The request id alone finds a settled question too: shown as decided; answered again, refused by the API.
    question = resumable(url, "show", request)
    assert question.returncode == 0, question.stderr
    assert question.stdout.splitlines()[0] == f"question {request}  approved (destructive): delete_record prod-db"
    assert "answered by: arn:aws:iam::000000000000:user/alice at " in question.stdout and "via cli" in question.stdout
    assert "answer it:" not in question.stdout
    late = resumable(url, "deny", request, "--message", "too late")
    assert late.returncode == 4 and "409 conflict: you already answered" in late.stderr
    unknown = resumable(url, "show", "r" + "0" * 24)
    assert unknown.returncode == 3 and "404 not_found: there is no question" in unknown.stderr
    malformed = resumable(url, "deny", "not-a-request", "--message", "no")
    assert (
        malformed.returncode == 2
        and "is not a request id" in malformed.stderr
        and "nothing was sent" in malformed.stderr
    )


def test_a_canceled_question_is_gone_and_denying_says_why(url: str) -> None:
    first = json.loads(resumable(url, "--json", "start", "cli-b", "delete the test-db record").stdout)
    assert resumable(url, "cancel", "cli-b", first["turnId"]).returncode == 0
    late = resumable(url, "approve", "cli-b", first["turnId"], first["interactions"][0]["requestId"])
    assert late.returncode == 5 and "410 gone" in late.stderr
    second = json.loads(resumable(url, "--json", "start", "cli-b", "delete the test-db record").stdout)
    denied = resumable(
        url, "deny", "cli-b", second["turnId"], second["interactions"][0]["requestId"], "--message", "not test"
    )
    assert denied.returncode == 0 and "DENIED: not test" in denied.stdout


def test_what_a_turn_says_reaches_the_terminal_as_text_never_as_its_control_sequences(url: str) -> None:
    """A denial's message (or a model's output) holding an escape sequence, a bell or a bidi override
    is shown escaped: the command never hands the approver's terminal a sequence to obey."""
    turn = json.loads(resumable(url, "--json", "start", "cli-c", "delete the test-db record").stdout)
    hostile = "no\x1b[2J\x07\u202etxt.exe"
    denied = resumable(url, "deny", "cli-c", turn["turnId"], turn["interactions"][0]["requestId"], "--message", hostile)
    shown = resumable(url, "show", "cli-c", turn["turnId"])
    for ran in (denied, shown):
        assert ran.returncode == 0, ran.stderr
        assert not any(c in ran.stdout for c in "\x1b\x07\u202e"), repr(ran.stdout)
        assert "DENIED: no\\x1b[2J\\x07\\u202etxt.exe" in ran.stdout, ran.stdout
    as_json = json.loads(resumable(url, "--json", "show", "cli-c", turn["turnId"]).stdout)
    assert hostile in as_json["output"]  # the data itself is kept whole


def test_an_unreachable_api_is_exit_1_and_says_where(url: str) -> None:
    ran = resumable("http://127.0.0.1:9", "inbox")
    assert ran.returncode == 1 and "could not reach http://127.0.0.1:9" in ran.stderr
    env = {k: v for k, v in os.environ.items() if k != "RESUMABLE_EVENTS_QUEUE"}
    events = subprocess.run(
        [sys.executable, "-m", "resumable.cli", "events"], capture_output=True, text=True, env=env, check=False
    )
    assert events.returncode == 2 and "--queue" in events.stderr


def test_a_queue_that_is_not_there_or_no_url_is_said_so_not_a_traceback(handler_environment: Any) -> None:
    missing = f"{handler_environment.endpoint_url}/123456789012/no-such-queue"
    for queue, code in ((missing, 1), ("not-a-url", 2)):
        ran = subprocess.run(
            [sys.executable, "-m", "resumable.cli", "events", "--queue", queue, "--once"],
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
            check=False,
        )
        assert ran.returncode == code, ran.stderr
        assert f"could not read the queue '{queue}'" in ran.stderr and "Traceback" not in ran.stderr, ran.stderr


def test_signed_requests_act_as_their_signer_and_a_forged_signature_is_refused(url: str, tmp_path: Path) -> None:
    started = json.loads(resumable(url, "--json", "start", "cli-owned", "delete the own-db record").stdout)
    turn, request = started["turnId"], started["interactions"][0]["requestId"]
    # bob signs as bob: alice's session is not his to see, nor in his inbox; the approver sees both.
    assert resumable(url, "show", "cli-owned", turn, profile="bob").returncode == 3
    assert "cli-owned" not in resumable(url, "inbox", profile="bob").stdout
    assert "cli-owned" in resumable(url, "inbox", profile="approver").stdout
    # A key the local API does not know, or the right key with the wrong secret: 403, as on AWS.
    forged = tmp_path / "forged"
    text = _CREDENTIALS[0].read_text()
    secret = next(line for line in text.splitlines() if line.startswith("aws_secret_access_key"))
    forged.write_text(text.replace(secret, "aws_secret_access_key = not-the-secret"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ACCESS_KEY", "AWS_SECRET", "AWS_SESSION"))}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": str(forged), "AWS_PROFILE": "approver"}
    ran = subprocess.run(
        [sys.executable, "-m", "resumable.cli", "--url", url, "--sign", "approve", "--yes", "cli-owned", turn, request],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env=env,
        check=False,
    )
    assert ran.returncode == 6 and "403 forbidden: The request signature we calculated" in ran.stderr, ran.stderr
    assert resumable(url, "approve", "--yes", "cli-owned", turn, request, profile="alice").returncode == 0


def test_a_url_that_is_no_address_and_a_profile_that_does_not_exist_are_bad_input(url: str) -> None:
    bad = resumable("notaurl", "inbox")
    assert bad.returncode == 2 and "is not an http:// or https:// address" in bad.stderr, bad.stderr
    missing = resumable(url, "inbox", profile="resumable-nobody")
    assert missing.returncode == 2 and "cannot sign: The config profile (resumable-nobody)" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.fixture
def two_person(url: str) -> Iterator[str]:
    """The local API, with a deployment rule for this test: deleting needs two approvers."""
    with settings(APPROVAL_RULES='[{"tools": ["delete_*"], "required": 2, "name": "two-person delete"}]'):
        yield url


def test_two_approvers_approve_from_the_terminal_and_the_first_is_told_it_waits(two_person: str) -> None:
    url = two_person
    turn = json.loads(resumable(url, "--json", "start", "cli-two", "delete the prod-db record", profile="bob").stdout)
    request = turn["interactions"][0]["requestId"]
    [row] = [r for r in resumable(url, "inbox", profile="approver").stdout.splitlines() if request in r]
    assert "0 of 2" in row

    first = resumable(url, "approve", "--yes", "cli-two", turn["turnId"], request, profile="approver")
    assert first.returncode == 0, first.stderr
    assert (
        "waiting" in first.stdout.splitlines()[0]
        and "1 of 2: arn:aws:iam::000000000000:user/approver-ann" in first.stdout
    )
    again = resumable(url, "approve", "--yes", "cli-two", turn["turnId"], request, profile="approver")
    assert again.returncode == 4 and "already approved" in again.stderr and "1 of 2 approvals" in again.stderr
    [row] = [r for r in resumable(url, "inbox", profile="approver").stdout.splitlines() if request in r]
    assert "1 of 2: arn:aws:iam::000000000000:user/approver-ann (you approved)" in row

    second = resumable(url, "approve", "--yes", "cli-two", turn["turnId"], request, profile="approver2")
    assert second.returncode == 0, second.stderr
    assert "completed" in second.stdout and "output: record prod-db deleted" in second.stdout
    assert "2 of 2: arn:aws:iam::000000000000:user/approver-ann, arn:aws:iam::000000000000:user/approver-ben" in (
        second.stdout
    )

    # The audit trail, exported: each approval with how its signer was authenticated, and what ran. (From
    # yesterday: every day the range spans is a Query of each shard, so a fixed date would slow by the day.)
    since = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    exported = resumable(url, "admin", "audit", "--since", since, "--format", "jsonl", profile="approver")
    assert exported.returncode == 0, exported.stderr
    everything = [e for e in map(json.loads, exported.stdout.splitlines()) if e["requestId"] == request]
    mine = [e for e in everything if e["kind"] != "refused"]
    assert [(e["kind"], e["outcome"]) for e in mine] == [("vote", "voted"), ("decision", "approved"), ("action", "ran")]
    # ann's approval sent again (409: hers stands) is no refusal on the trail: it counted
    assert [e for e in everything if e["kind"] == "refused"] == []
    assert {e["startedBy"] for e in mine} == {turn["interactions"][0]["startedBy"]}
    ann, ben = "arn:aws:iam::000000000000:user/approver-ann", "arn:aws:iam::000000000000:user/approver-ben"
    assert [(v["by"], v["authentication"]["method"], v["authentication"]["arn"]) for v in mine[1]["votes"]] == [
        (ann, "iam", ann),
        (ben, "iam", ben),
    ]
    assert mine[1]["inputAsked"] == {"name": "prod-db"} and mine[1]["rule"] == "two-person delete"
    assert f"audit records from {since}T00:00:00.000Z to " in exported.stderr
    table = resumable(url, "admin", "audit", "--since", since, "--outcome", "approved", profile="approver")
    assert table.returncode == 0, table.stderr
    [row] = [r for r in table.stdout.splitlines() if request in r]
    assert "approved" in row and "2 approvals: " + ann in row
    refused = resumable(url, "admin", "audit", profile="bob")  # not an approver
    assert refused.returncode == 6 and "403 forbidden" in refused.stderr and "approvers only" in refused.stderr
    bad = resumable(url, "admin", "audit", "--since", "last week", profile="approver")
    assert bad.returncode == 2 and "ISO 8601" in bad.stderr


def test_approving_ones_own_turn_under_a_two_person_rule_is_refused_naming_the_rule(two_person: str) -> None:
    url = two_person
    began = datetime.now(UTC).isoformat()  # (the trail of this test alone)
    turn = json.loads(
        resumable(url, "--json", "start", "cli-own", "delete the dev-db record", profile="approver").stdout
    )
    request = turn["interactions"][0]["requestId"]
    assert request not in resumable(url, "inbox", profile="approver").stdout

    refused = resumable(url, "approve", "--yes", "cli-own", turn["turnId"], request, profile="approver")
    assert refused.returncode == 6, refused.stderr
    assert "403 forbidden" in refused.stderr and "approval rule 'two-person delete'" in refused.stderr
    assert request in resumable(url, "inbox", profile="approver2").stdout
    [mine] = [r for r in resumable(url, "inbox", "--started", profile="approver").stdout.splitlines() if request in r]
    assert "0 of 2 from any approver; you started this turn, so yours cannot count" in mine, mine
    withdrawn = resumable(url, "deny", request, "--message", "not after all", profile="approver")  # (by its id alone)
    assert withdrawn.returncode == 0 and "denied" in withdrawn.stdout, withdrawn.stdout + withdrawn.stderr
    # From the trail alone: no approved call of its starter's, and the attempt refused, by whom
    checked = resumable(url, "admin", "audit", "--since", began, "--check-separation", profile="approver2")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    [tried] = [r for r in checked.stdout.splitlines() if request in r]
    assert "arn:aws:iam::000000000000:user/approver-ann" in tried and "two-person delete" in tried
    assert "0 approved by the one who started its turn; 1 refused attempt to approve one's own call" in checked.stderr


def test_an_escalated_question_reaches_the_inbox_of_the_one_it_escalated_to_marked_so(url: str) -> None:
    from tests.e2e.test_two_person import _sweep_once_escalation_is_due

    ann, ben = "arn:aws:iam::000000000000:user/approver-ann", "arn:aws:iam::000000000000:user/approver-ben"
    rules = [{"tools": ["delete_*"], "approvers": [ann], "escalate_after": 1, "escalate_to": [ben]}]
    with settings(APPROVAL_RULES=json.dumps(rules)):
        turn = json.loads(resumable(url, "--json", "start", "cli-esc", "delete the qa-db record", profile="bob").stdout)
        asked = time.time()  # (after the question was asked)
        request = turn["interactions"][0]["requestId"]
        assert request not in resumable(url, "inbox", profile="approver2").stdout

        _sweep_once_escalation_is_due(asked)

        [row] = [r for r in resumable(url, "inbox", profile="approver2").stdout.splitlines() if request in r]
        assert "0 of 1 (escalated)" in row
        approved = resumable(url, "approve", "--yes", "cli-esc", turn["turnId"], request, profile="approver2")
        assert approved.returncode == 0 and "completed" in approved.stdout, approved.stderr


def test_respond_in_words_dismiss_for_oneself_and_an_edit_shown_as_what_was_approved(url: str) -> None:
    with settings(AGENT_FACTORY="tests.factories:asks_a_question"):
        asked = json.loads(resumable(url, "--json", "start", "cli-ask", "pick a region").stdout)
        request = asked["interactions"][0]["requestId"]
        replied = resumable(url, "respond", request, "--text", "eu-west-1")
        assert replied.returncode == 0 and "output: region chosen" in replied.stdout, replied.stderr
        [row] = [r for r in replied.stdout.splitlines() if r.startswith(request)]
        assert row.split()[1] == "answered"

    turn = json.loads(resumable(url, "--json", "start", "cli-dis", "delete the prod-db record").stdout)
    request = turn["interactions"][0]["requestId"]
    not_words = resumable(url, "respond", request, "--text", "sure")
    assert not_words.returncode == 2 and "is an approval: resumable approve or deny it" in not_words.stderr
    dismissed = resumable(url, "dismiss", request, profile="approver")
    assert dismissed.returncode == 0 and "hidden from your inbox, still waiting for others" in dismissed.stdout
    assert request not in resumable(url, "inbox", profile="approver").stdout
    assert request in resumable(url, "inbox").stdout  # (alice's own question: still in her inbox)
    [row] = [r for r in resumable(url, "inbox", "--dismissed", profile="approver").stdout.splitlines() if request in r]
    assert "(dismissed)" in row
    back = resumable(url, "dismiss", request, "--undo", profile="approver")
    assert back.returncode == 0 and "in your inbox again" in back.stdout
    assert request in resumable(url, "inbox", profile="approver").stdout

    with settings(APPROVAL_EDITS="delete_record"):
        edits = json.loads(resumable(url, "--json", "start", "cli-edit", "delete the prod-db record").stdout)
        request = edits["interactions"][0]["requestId"]
        approved = resumable(url, "approve", "--yes", request, "--input", '{"name": "prod-db-replica"}')
        assert approved.returncode == 0, approved.stderr
        assert (
            'your edit of delete_record\'s input:\n  - name: "prod-db"\n  + name: "prod-db-replica"' in approved.stderr
        )
        [row] = [r for r in approved.stdout.splitlines() if r.startswith(request)]
        assert "approved with edits" in row and 'delete_record {"name": "prod-db-replica"} (edited)' in row


def test_show_says_why_a_question_waits_and_conversation_prints_what_led_to_it(url: str) -> None:
    turn = json.loads(resumable(url, "--json", "start", "cli-talk", "delete the talk-db record").stdout)
    shown = resumable(url, "show", "cli-talk", turn["turnId"])
    request = turn["interactions"][0]["requestId"]
    assert f"{request} waits (destructive), for arn:aws:iam::000000000000:user/alice:" in shown.stdout
    assert "    why: You asked me to delete the record talk-db; delete_record does that." in shown.stdout
    child = turn["children"][0]["turnId"]
    talk = resumable(url, "conversation", "cli-talk", child)
    assert talk.returncode == 0, talk.stderr
    assert talk.stdout.splitlines() == [
        "db_admin's conversation: 2 messages, messages 1 to 2",
        " user: delete talk-db",
        "agent: You asked me to delete the record talk-db; delete_record does that.",
        'agent: calls delete_record {"name": "talk-db"}',
    ]
    earlier = resumable(url, "conversation", "cli-talk", turn["turnId"], "--limit", "1")
    assert earlier.stdout.splitlines()[-1] == f"earlier: resumable conversation cli-talk {turn['turnId']} --before 1"


def test_the_three_id_form_confirms_too_and_a_denial_shows_as_denied(url: str) -> None:
    turn = json.loads(resumable(url, "--json", "start", "cli-three", "delete the three-db record").stdout)
    request = turn["interactions"][0]["requestId"]
    unconfirmed = resumable(url, "approve", "cli-three", turn["turnId"], request)
    assert unconfirmed.returncode == 2 and "pass --yes" in unconfirmed.stderr, unconfirmed.stderr
    unknown = resumable(url, "approve", "cli-three", "0" * 32, request)  # (its turn cannot be read: nothing sent)
    assert unknown.returncode == 3 and "404 not_found" in unknown.stderr
    blank = resumable(url, "deny", request, "--message", "  ")
    assert blank.returncode == 2 and "--message is blank" in blank.stderr
    not_an_object = resumable(url, "approve", "--yes", request, "--input", "[1]")
    assert not_an_object.returncode == 2 and "--input must be a JSON object" in not_an_object.stderr
    assert request in resumable(url, "inbox").stdout  # (none of those sent anything)
    denied = resumable(url, "deny", "cli-three", turn["turnId"], request, "--message", "not three")
    assert denied.returncode == 0, denied.stderr
    [row] = [r for r in denied.stdout.splitlines() if r.startswith(request)]
    assert row.split()[1] == "denied"
    again = resumable(url, "deny", "cli-three", turn["turnId"], request, "--message", "not three")
    assert again.returncode == 0 and "was already answered by arn:aws:iam::000000000000:user/alice" in again.stderr


def test_the_smoke_test_of_a_deploy_passes_against_the_api_signed_and_fails_naming_its_step(url: str) -> None:
    """docs/deploy.md's check after a deploy, here against the local API, signed as an approver."""
    smoke = [sys.executable, str(Path(__file__).resolve().parents[2] / "tools" / "smoke.py"), "--url", url, "--sign"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_ACCESS_KEY", "AWS_SECRET", "AWS_SESSION"))}
    env |= {"AWS_SHARED_CREDENTIALS_FILE": str(_CREDENTIALS[0]), "AWS_PROFILE": "approver"}
    passed = subprocess.run(smoke, capture_output=True, text=True, timeout=HANG_SECONDS, env=env, check=False)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert re.search(r"^smoke: approve r\w+: ok", passed.stdout, re.MULTILINE), passed.stdout
    assert "smoke: passed in " in passed.stdout and "approved, completed, deleted" in passed.stdout
    assert " waits (destructive), for " in passed.stdout, "each question printed as the desk prints it"
    # Told to deny, then to leave the question waiting: the turn completes denied; the question stays open.
    denied = subprocess.run(
        [*smoke, "--deny", "not today"], capture_output=True, text=True, timeout=HANG_SECONDS, env=env, check=False
    )
    assert denied.returncode == 0, denied.stdout + denied.stderr
    assert "denied, completed, deleted" in denied.stdout and "DENIED: not today" in denied.stdout
    left = subprocess.run(
        [*smoke, "--prompt", "delete the left-db record", "--leave"],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env=env,
        check=False,
    )
    assert left.returncode == 0, left.stdout + left.stderr
    assert "smoke: left waiting, as told: answer it with resumable approve r" in left.stdout
    session = re.search(r"left waiting \((smoke-\w+)\)", left.stdout)
    assert session is not None
    status, listed = call(url, "GET", f"/sessions/{session.group(1)}/interactions?status=requested", principal=APPROVER)
    assert (status, len(listed["interactions"])) == (200, 1), listed
    # Credentials that cannot sign: the first step fails, and the smoke test says which and why.
    nobody = env | {"AWS_PROFILE": "resumable-nobody"}
    refused = subprocess.run(smoke, capture_output=True, text=True, timeout=HANG_SECONDS, env=nobody, check=False)
    assert refused.returncode == 1
    assert "smoke: FAILED: start a turn, until it asks or settles: the command exited 2: " in refused.stderr
    assert "cannot sign" in refused.stderr


def test_a_question_approved_by_its_id_alone_the_moment_it_is_asked_is_found_while_the_index_lags(url: str) -> None:
    """The API finds a question by its request id through an index: for a moment after a question is
    asked it may not list it (the embedded AWS's lag, LAG requests: the first lookup cannot find it, a
    later one can). The command asks again before it says the question is not found."""
    lag = 4
    with lagging(lag, least=lag):
        status, turn = call(url, "POST", "/sessions/cli-lag/turns", {"prompt": "delete the lag-db record"}, APPROVER)
        assert status == 201 and turn["status"] == "waiting", turn
        request = turn["interactions"][0]["requestId"]
        assert call(url, "GET", f"/interactions/{request}", None, APPROVER)[0] == 404, "not listed yet"
        approved = resumable(url, "approve", "--yes", request, profile="approver")
    assert approved.returncode == 0, approved.stderr
    assert "completed" in approved.stdout


def test_admin_audit_verify_checks_the_delivered_trail_and_names_what_was_touched(
    url: str, handler_environment: Any
) -> None:
    """The sweeper (its scheduled event, through its function) delivers the last settled hour; the
    command checks it, then names the records file changed (exit 1), and refuses anyone but an approver."""
    from resumable.local.functions import ROOT
    from resumable.service.audit.delivery import HOUR, SETTLE_SECONDS, records_key
    from resumable.store.trail_files import TrailFiles
    from tools.invoke import invoke

    hour = (time.time() - SETTLE_SECONDS) // HOUR * HOUR - HOUR  # (before the run: delivered by it, whenever it is)
    invoke("SweeperFunction", json.loads((ROOT / "events" / "schedules" / "sweep.json").read_text()))
    start = datetime.fromtimestamp(hour, UTC).isoformat()
    end = datetime.fromtimestamp(hour + HOUR - 1, UTC).isoformat()

    intact = resumable(url, "admin", "audit", "verify", "--from", start, "--to", end, profile="approver")
    assert intact.returncode == 0, intact.stderr
    assert "intact: 1 hour and" in intact.stderr and intact.stdout == ""
    refused = resumable(url, "admin", "audit", "verify", "--from", start, "--to", end)
    assert refused.returncode == 6 and "403 forbidden: the audit trail is for approvers only" in refused.stderr
    files = TrailFiles(handler_environment)
    held = files.get(records_key(hour)) or b""
    files.s3.put_object(Bucket=files.bucket, Key=records_key(hour), Body=held + b'{"forged": true}\n')
    try:
        broken = resumable(url, "admin", "audit", "verify", "--from", start, "--to", end, profile="approver")
    finally:
        files.s3.put_object(Bucket=files.bucket, Key=records_key(hour), Body=held)
    assert broken.returncode == 1, broken.stderr
    assert broken.stdout.count("\n") == 2 and "records_file_changed in s3" in broken.stdout
    assert "NOT INTACT: 2 problems; the first: " in broken.stderr and "replaced in s3" in broken.stderr
    # Over more than a day, from a time within an hour: asked a day of whole hours at a time.
    day_before = datetime.fromtimestamp(hour - 30 * HOUR + 1800, UTC).isoformat()
    longer = resumable(url, "admin", "audit", "verify", "--from", day_before, profile="approver")
    assert longer.returncode == 1 and longer.stderr.count("checked ") == 2, longer.stderr
    assert "NOT INTACT" in longer.stderr
    default = resumable(url, "admin", "audit", "verify", profile="approver")  # (the 24 hours before now)
    assert default.returncode in (0, 1, 3) and "checked " in default.stderr, default.stderr
    unparsed = resumable(url, "admin", "audit", "verify", "--from", "yesterday", profile="approver")
    assert unparsed.returncode == 2 and "is not an ISO 8601 date or time" in unparsed.stderr
