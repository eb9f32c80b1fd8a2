"""What Slack is shown of a question is built within Slack's limits whatever the agent wrote, and shows
it literally: no link, mention or formatting can be made of a tool's name, an agent's path, a
summary or an input, no code block ended, and no control or format character obeyed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from resumable.events.schemas import InteractionRequested
from resumable.service.views import InteractionView
from resumable.slack.messages import (
    MAX_SECTION_CHARS,
    Asked,
    Opened,
    deny_modal,
    edit_modal,
    editable_text,
    escaped,
    question,
    settled,
)
from tests.slack import requested

HOSTILE = "<!channel> <https://evil.example/approve|Approve>\u202e````\x07"
"""What an agent may write: a mention, a link, a right-to-left override, a code block's end, a bell."""


def _asked(**changed: Any) -> InteractionRequested:
    detail = requested(editable=True, inboxUrl="https://api.example.com/inbox#q-r1")
    return InteractionRequested.model_validate(detail | {_camel(k): v for k, v in changed.items()})


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    texts = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    return texts + [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]


def test_a_question_shows_what_it_is_and_the_buttons_that_answer_it() -> None:
    blocks = question(_asked())
    [actions] = [b for b in blocks if b["type"] == "actions"]
    assert [e["text"]["text"] for e in actions["elements"]] == ["Approve", "Deny", "Edit"]
    assert [Asked.model_validate_json(e["value"]) for e in actions["elements"]] == 3 * [
        Asked(session_id="s1", turn_id="t1", request_id="r1")
    ]
    shown = "\n".join(_texts(blocks))
    assert "*orchestrator → db_admin* wants to run *delete_record*" in shown and '"prod-db"' in shown
    assert "<https://api.example.com/inbox#q-r1|Open it on the inbox page>" in shown and "<!date^" in shown
    assert [b["type"] for b in question(_asked(editable=False)) if b["type"] == "actions"] == ["actions"]
    assert len(next(b for b in question(_asked(editable=False)) if b["type"] == "actions")["elements"]) == 2


def test_a_question_that_is_not_an_approval_gets_no_buttons_but_the_way_to_answer_it() -> None:
    blocks = question(_asked(name="ask_user", tool=None))
    assert "actions" not in [b["type"] for b in blocks]
    assert "Answer it on the inbox page" in "\n".join(_texts(blocks))


@pytest.mark.parametrize(
    "tool_input",
    [{"q": "<" * 3000}, {"q": "&" * 3000}, {"q": "x" * 10_000}, ["é" * 2000], {"q": "`" * 3000}],
    ids=["angle brackets", "ampersands", "long", "not ASCII", "backticks"],
)
def test_any_input_fits_slacks_limits_cut_with_a_link_to_the_whole(tool_input: Any) -> None:
    blocks = question(_asked(input=tool_input, summary="<" * 5000, agent_path=["&" * 2000]))
    assert all(len(text) <= MAX_SECTION_CHARS for text in _texts(blocks))
    shown = "\n".join(_texts(blocks))
    assert "<" not in shown.replace("<https://api.example.com/inbox#q-r1|", "").replace("<!date^", "")
    if len(escaped(json.dumps(tool_input, indent=2, ensure_ascii=False), 10**6)) > 2500:
        assert "See the whole input on the inbox page" in shown


def test_what_the_agent_wrote_makes_no_link_mention_or_code_block_end() -> None:
    blocks = question(
        _asked(tool="<!channel>", agent_path=["<@U0BOSS>"], summary="<https://evil.example|approve here>",
               input={"sql": "```\n*bold* <!here>"})
    )  # fmt: skip
    shown = "\n".join(_texts(blocks))
    for made in ("<!channel>", "<@U0BOSS>", "<https://evil.example", "<!here>"):
        assert made not in shown
    body = next(t for t in _texts(blocks) if t.startswith("```"))
    assert body.count("```") == 2, "the input's own backticks do not close the block"
    said = "\n".join(_texts(settled(_asked(), "approved by <!channel> at 10:02")))
    assert "<!channel>" not in said and "&lt;!channel&gt;" in said
    assert "actions" not in [b["type"] for b in settled(_asked(), "approved")]


@pytest.mark.parametrize("run", ["```", "````", "`" * 7])
def test_no_run_of_backticks_in_the_input_ends_its_code_block_and_none_is_lost(run: str) -> None:
    body = next(t for t in _texts(question(_asked(input={"sql": f"a{run}b"}))) if t.startswith("```"))
    assert body.count("```") == 2, f"the input's {run!r} ends the block: {body!r}"
    assert body.replace("\u200b", "").count("`") == 6 + len(run), "every backtick is still shown"


def test_no_control_or_format_character_the_agent_wrote_reaches_slack_each_is_shown_as_its_escape() -> None:
    asked = _asked(tool=HOSTILE, agent_path=[HOSTILE], summary=HOSTILE, input={"q": HOSTILE, "c1": "\x85"})
    shown = "\n".join(_texts(question(asked)) + _texts(settled(asked, f"Closed: {HOSTILE}")))
    assert not [c for c in "\u202e\x07\x85" if c in shown], f"obeyed, not shown: {shown!r}"
    assert "\\u202e" in shown and "\\u0007" in shown and "\\u0085" in shown
    assert "<!channel>" not in shown and "<https://evil.example" not in shown
    assert "&lt;!channel&gt; &lt;https://evil.example/approve|Approve&gt;" in shown, "the agent's words are all there"
    text = editable_text({"q": HOSTILE, "tag": "\U000e0001"})
    assert text is not None and not [c for c in "\u202e\x07\U000e0001" if c in text], f"obeyed in the modal: {text!r}"
    assert json.loads(text) == {"q": HOSTILE, "tag": "\U000e0001"}, "the edit modal's JSON reads back as asked"


def test_escaping_cuts_where_no_escape_is_split() -> None:
    assert escaped("a<b", 10) == "a&lt;b"
    assert escaped("<<<", 6) == "&lt;…"
    assert escaped("a\u202eb\x07\n\t", 40) == "a\\u202eb\\u0007\n\t"
    assert escaped("\u202e\u202e", 7) == "\\u202e…"
    assert escaped("abcdef", 4) == "abc…"
    assert escaped("abcd", 4) == "abcd"


def test_the_modals_carry_the_question_and_its_message_and_an_input_too_large_opens_none() -> None:
    opened = Opened(asked=Asked(session_id="s", turn_id="t", request_id="r"), channel_id="C1", message_ts="1.2")
    assert Opened.model_validate_json(deny_modal(opened)["private_metadata"]) == opened
    text = editable_text({"name": "héllo"})
    assert text is not None and "héllo" in text
    assert edit_modal(opened, text)["blocks"][0]["element"]["initial_value"] == text
    assert editable_text({"q": "x" * 3000}) is None


def test_the_slack_configuration_is_read_from_the_environment_and_a_bad_one_is_named() -> None:
    from resumable.slack.function import SlackConfig

    env = {
        "SLACK_CHANNEL": "C0A",
        "SLACK_SECRET_ARN": "arn:s",
        "SLACK_TEAMS": " T1, T2 ,",
        "SLACK_PEOPLE": '{"U1": "p"}',
    }
    config = SlackConfig.from_env(env)
    assert (config.teams, config.people, config.api_url) == (("T1", "T2"), {"U1": "p"}, "https://slack.com/api/")
    with pytest.raises(ValueError, match="SLACK_PEOPLE is not JSON"):
        SlackConfig.from_env({**env, "SLACK_PEOPLE": "{U1: p}"})
    with pytest.raises(ValueError, match=r"teams: .*SLACK_TEAMS"):
        SlackConfig.from_env({**env, "SLACK_TEAMS": ""})
    with pytest.raises(ValueError, match="people"):
        SlackConfig.from_env({**env, "SLACK_PEOPLE": '{"U1": 7}'})


def test_a_request_from_the_future_or_a_payload_of_the_wrong_shape_is_refused_in_words() -> None:
    from resumable.slack.requests import SlackRequestError, read
    from tests.slack import SIGNING_SECRET, signed

    now = 1_796_400_000.0
    with pytest.raises(SlackRequestError, match="3600 s in the future"):
        read(*signed({"type": "block_actions"}, now + 3600), SIGNING_SECRET, now)
    for payload, said in (
        ({}, "it has no field 'user'"),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": []}, "a press carries exactly one action"),
        ({"type": "block_actions", "user": "U1"}, "a field is not of the type Slack sends"),
    ):
        with pytest.raises(SlackRequestError, match=said):
            read(*signed(payload, now), SIGNING_SECRET, now)


def _held(**changed: Any) -> InteractionView:
    """The question as the table holds it (what the inbox card shows to judge it)."""
    return InteractionView.model_validate(
        {
            "session_id": "s1", "request_id": "r1", "interrupt_id": "i1", "turn_id": "t1", "child_turn_id": None,
            "name": "approval", "reason": {"tool": "delete_record", "input": {"name": "prod-db"}},
            "agent_path": ["orchestrator", "db_admin"], "status": "requested", "editable": True, "response": None,
            "answered_by": None, "answered_at": None, "expires_at": "2026-12-04T11:00:00Z",
            "summary": "delete_record prod-db", "started_by": "arn:aws:iam::1:user/owner", "root_prompt": "tidy up",
            **changed,
        }
    )  # fmt: skip


def _approve(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    [actions] = [b for b in blocks if b["type"] == "actions"]
    return dict(next(e for e in actions["elements"] if e["text"]["text"] == "Approve"))


def test_a_destructive_call_asks_for_a_confirmation_naming_what_runs_before_approve_sends_anything() -> None:
    held = _held(risk="destructive", impact="Deletes it for good", confirm=True)
    approve = _approve(question(_asked(), held))
    dialog = approve["confirm"]
    assert (dialog["title"]["text"], dialog["confirm"]["text"], dialog["deny"]["text"]) == (
        "Run it?",
        "Approve: run it",
        "Cancel",
    )
    said = dialog["text"]["text"]
    assert dialog["text"]["type"] == "plain_text", "shown as written: no mrkdwn in a dialog"
    assert said == "Approving runs delete_record (risk: destructive). Deletes it for good. With: prod-db"
    assert approve["style"] == "danger"
    # The facts first, the agent's values last, all within Slack's 300: a long input is cut, never the risk
    long = question(_asked(), _held(risk="destructive", confirm=True, summary="delete_record " + "x" * 400))
    assert _approve(long)["confirm"]["text"]["text"].startswith("Approving runs delete_record (risk: destructive).")
    assert len(_approve(long)["confirm"]["text"]["text"]) == 300
    # A rule's confirm asks too, under any risk; a call that needs none is one press, as before
    assert "confirm" in _approve(question(_asked(), _held(risk="low", confirm=True)))
    assert "confirm" not in _approve(question(_asked(), _held(risk="low")))
    assert "confirm" not in _approve(question(_asked()))  # (no question held, and the event says none)
    assert "confirm" in _approve(question(_asked(confirm=True)))  # (the event's word, where none is held)


def test_the_message_shows_what_the_inbox_card_shows_to_judge_it_literally() -> None:
    rule = {"name": "two", "tools": ["delete_*"], "approvers": None, "required": 2, "self_approval": False}
    vote = {"by": "arn:aws:iam::1:user/alice", "at": "2026-12-04T10:01:00Z"}
    held = _held(
        risk="high", impact=HOSTILE, root_prompt=HOSTILE + "x" * 2000, reason={"explanation": HOSTILE},
        started_by_name=HOSTILE, rule=rule, approvals=[vote], explanation=HOSTILE,
    )  # fmt: skip
    blocks = question(_asked(), held)
    shown = "\n".join(_texts(blocks))
    assert "*Risk: high*: &lt;!channel&gt;" in shown and "Turn started by arn:aws:iam::1:user/owner\n" in shown
    assert "Approvals: 1 of 2: arn:aws:iam::1:user/alice" in shown and "> The agent's reason: &lt;!channel&gt;" in shown
    assert "> Prompt: &lt;!channel&gt;" in shown and "x" * 400 not in shown, "the prompt is cut"
    assert "> Their sign-in gives their name as: &lt;!channel&gt;" in shown
    assert "<!channel>" not in shown and "\u202e" not in shown and "\x07" not in shown
    assert "({ago})" in shown, "the time left, as Slack counts it"
    assert "Approvals" not in "\n".join(_texts(question(_asked(), _held()))), "one approval needed: no count"


def test_what_people_and_the_agent_wrote_cannot_make_a_line_that_passes_for_resumables() -> None:
    forged = "routine cleanup\n*Risk: low*: read-only\nApprovals: 2 of 2: alice\nTurn started by ceo"
    held = _held(risk="destructive", root_prompt=forged, explanation=forged, started_by_name=forged)
    facts, words = [b["text"]["text"] for b in question(_asked(), held) if b["type"] == "section"][2:4]
    assert facts == "*Risk: destructive*\nTurn started by arn:aws:iam::1:user/owner", facts
    assert all(line.startswith("> ") for line in words.split("\n")) and len(words.split("\n")) == 3, words
