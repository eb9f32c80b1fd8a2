"""What `resumable events` prints of an answer: the decision, who gave it, and an edit's input."""

from __future__ import annotations

from resumable.local.events import line


def answered(response: object) -> dict[str, object]:
    decision = response.get("decision") if isinstance(response, dict) else None
    detail = {"sessionId": "s", "sequence": 2, "decision": decision, "response": response, "answeredBy": "ann"}
    return {"detail-type": "Interaction Answered", "detail": detail}


def test_an_edited_approval_prints_the_input_it_approved() -> None:
    edited = answered({"decision": "approve", "input": {"name": "prod-db-replica"}})
    assert line(edited) == 's  #2  Interaction Answered  approve ann with the edited input {"name": "prod-db-replica"}'
    assert line(answered({"decision": "approve"})) == "s  #2  Interaction Answered  approve ann"


def test_a_denial_prints_what_the_agent_was_told() -> None:
    denied = answered({"decision": "deny", "message": "not prod"})
    assert line(denied) == 's  #2  Interaction Answered  deny ann saying "not prod"'
