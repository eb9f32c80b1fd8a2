"""One rule for every conditional write of the store: a failed condition is a refusal (an answer for
the caller, with what the write found); a write that failed otherwise is an AWS failure to raise."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from resumable.store.table import refusal

HELD = {"pk": {"S": "SESSION#s"}, "status": {"S": "answered"}}


def _error(code: str, **response: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "x"}, **response}, "TransactWriteItems")  # type: ignore[arg-type]


def test_a_single_write_its_condition_refused_is_a_refusal_holding_what_it_found() -> None:
    refused = refusal(_error("ConditionalCheckFailedException", Item=HELD))
    assert refused is not None and not refused.transaction and refused.item() == HELD
    assert refusal(_error("ConditionalCheckFailedException")).item() == {}  # type: ignore[union-attr]


def test_a_transaction_one_of_whose_conditions_failed_is_a_refusal_naming_which() -> None:
    reasons = [{"Code": "None"}, {"Code": "ConditionalCheckFailed", "Item": HELD}]
    refused = refusal(_error("TransactionCanceledException", CancellationReasons=reasons))
    assert refused is not None and refused.transaction
    assert (refused.refused(0), refused.refused(1)) == (False, True)
    assert (refused.item(0), refused.item(1)) == (None, HELD)


def test_a_write_that_failed_otherwise_is_no_refusal() -> None:
    conflict = [{"Code": "TransactionConflict"}, {"Code": "None"}]
    assert refusal(_error("TransactionCanceledException", CancellationReasons=conflict)) is None
    assert refusal(_error("TransactionCanceledException", CancellationReasons=[{"Code": "ValidationError"}])) is None
    assert refusal(_error("ProvisionedThroughputExceededException")) is None
    assert refusal(_error("ValidationException")) is None
