"""The DynamoDB table under the store: its client, failures translated, transactions retried on
conflict, and a refused condition told apart from any other cancellation."""

from __future__ import annotations

import functools
import random
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from botocore.exceptions import ClientError

from resumable.aws.at_once import at_once
from resumable.config import Settings
from resumable.exceptions import AwsError, ResumableError
from resumable.store.codec import sharded

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_P = ParamSpec("_P")
_R = TypeVar("_R")

MAX_TRANSACTION_ITEMS = 100
_BATCH_GET = 100  # BatchGetItem's most keys
_BATCH_GET_ATTEMPTS = 6

# A refusal is told by its error code, not by the client's exception class: botocore builds those on
# first use of ``client.exceptions`` (about 20 ms, so only a refusal pays for them) without a lock, and
# two threads refused at once in a new process can each get a class of their own (the lease's
# heartbeat beside a fenced write, two duplicates on the local API): one ``except`` would then miss
# the other's refusal.
CONDITION_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"


def code_of(error: ClientError) -> str:
    """The error code AWS answered with (``ConditionalCheckFailedException``, ``NoSuchKey``, ...)."""
    return str(error.response.get("Error", {}).get("Code", ""))


_CONFLICT_ATTEMPTS = 5


def aws_call(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Any failure of an AWS call surfaces as ``AwsError``: an error of resumable, which the agent
    loop never turns into a tool result (it would use up a person's answer)."""

    @functools.wraps(method)
    def translated(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except (ResumableError, TypeError):  # (a TypeError is a wrong call of ours, never AWS's failure)
            raise
        except Exception as error:
            raise AwsError(
                f"the AWS call behind {method.__name__} failed: {error}. Nothing after it happened; what was "
                "written before it stands and a turn is left resumable: retry the request, or call recover"
            ) from error

    return translated


@dataclass(frozen=True)
class Refusal:
    """A write that its condition refused: a lost race, an answer to give the caller. For a single
    write, the item as it was where the write asked for it (``ALL_OLD``); for a transaction, which of its
    writes were refused, each with its item as it was."""

    transaction: bool
    reasons: tuple[dict[str, Any], ...] = ()
    held: dict[str, Any] | None = None

    def refused(self, index: int) -> bool:
        """Whether the ``index``-th write of the transaction was one its condition refused."""
        return self.reasons[index].get("Code") == "ConditionalCheckFailed"

    def item(self, index: int = 0) -> dict[str, Any] | None:
        """The item the refused write found (``{}``: none), where it asked for it; for a transaction,
        the ``index``-th write's, and None where that write was not the one refused."""
        if not self.transaction:
            return self.held
        return refused_item_of(self.reasons, index)


def refusal(error: ClientError) -> Refusal | None:
    """What the failed condition of a write says, or None where the write failed otherwise: then it is
    an AWS failure to raise (a malformed item, throttling, a transaction canceled by a conflict that
    outlasted the retries), never a refusal."""
    code = code_of(error)
    if code == CONDITION_FAILED:
        return Refusal(transaction=False, held=error.response.get("Item") or {})  # type: ignore[arg-type]
    if code == TRANSACTION_CANCELED and condition_failed(error):
        return Refusal(transaction=True, reasons=tuple(reasons(error)))
    return None


def reasons(error: Exception) -> list[dict[str, Any]]:
    """The cancellation reasons of a canceled transaction, one per item, in order."""
    response: dict[str, Any] = getattr(error, "response", {})
    found: list[dict[str, Any]] = response.get("CancellationReasons", [])
    return found


def condition_failed(error: Exception) -> bool:
    """Whether a canceled transaction was refused by one of its conditions (a lost race, an answer to
    give the caller), rather than for any other reason (a malformed item, throttling, a conflict that
    outlasted the retries), which is an AWS failure: ``AwsError``, never a refusal."""
    return any(reason.get("Code") == "ConditionalCheckFailed" for reason in reasons(error))


def refused_item_of(reasons: Sequence[dict[str, Any]], index: int) -> dict[str, Any] | None:
    """The item the ``index``-th write's failed condition returned (``ALL_OLD``), if that write's
    condition failed; None otherwise."""
    reason = reasons[index]
    if reason.get("Code") != "ConditionalCheckFailed":
        return None
    found: dict[str, Any] = reason.get("Item") or {}
    return found


class Table:
    """One DynamoDB table: ``self.dynamodb`` (the client) and ``self.table`` (its name), as ``settings``
    say."""

    def __init__(self, settings: Settings, dynamodb: DynamoDBClient | None = None) -> None:
        self.settings = settings
        self.table = settings.table_name
        if dynamodb is None:
            from resumable.aws.clients import client

            dynamodb = client("dynamodb", settings)
        self.dynamodb: DynamoDBClient = dynamodb
        self.shards = settings.index_shards

    def sharded(self, base: str, session_id: str) -> str:
        """The partition key of ``session_id``'s items in the sharded partition ``base``."""
        return sharded(base, session_id, self.shards)

    def merged(self, requests: list[dict[str, Any]], order: str, limit: int) -> Merged:
        """Up to ``limit`` items of several Queries (one per shard of a sharded partition) in ascending
        ``order`` (the sort key's attribute, unique across them or ties in any order), as one Query of
        one partition would list them, looping to fill the page. Each shard is read in small pages, the
        first of every shard at once (``at_once``), then on only while its next item could come next;
        at most ``2 * shards + 8`` Queries (a filter can leave many read items out), then the page
        ends early, saying where it got to."""
        streams = [_Stream(dict(request)) for request in requests]
        first = min(limit, -(-2 * limit // len(streams)) + 1)  # (ceil: twice each shard's fair share)
        reads = 2 * len(streams) + 8
        found: list[dict[str, Any]] = []
        if limit > 0:
            at_once([functools.partial(s.read_more, self.dynamodb, order, first) for s in streams])
            reads -= len(streams)
        while len(found) < limit:
            unread = [s for s in streams if not s.items and not s.done]
            ready = [s for s in streams if s.items]
            if not ready and not unread:
                break
            lowest = min(unread, key=lambda s: s.read_to, default=None)  # (read up to there, nothing after yet)
            head = min(ready, key=lambda s: _ordered(s.items[0], order), default=None)
            if head is not None and (lowest is None or _ordered(head.items[0], order) <= lowest.read_to):
                found.append(head.items.popleft())
            elif reads <= 0:  # every item up to where the lowest was read has been taken or left out
                assert lowest is not None
                return Merged(found, True, lowest.read_to)
            else:
                assert lowest is not None
                lowest.read_more(self.dynamodb, order, max(limit - len(found), first))
                reads -= 1
        more = any(s.items or not s.done for s in streams)
        return Merged(found, more, _ordered(found[-1], order) if more and found else None)

    def _batch_get(self, keys: list[dict[str, Any]], what: str, then: str, **read: Any) -> Iterator[dict[str, Any]]:
        """The items of ``keys`` that exist (``BatchGetItem``, 100 keys a call, consistent; ``read``:
        more of its options, such as ``ProjectionExpression``), what DynamoDB left unread (throttled)
        asked again with backoff; ``AwsError`` naming ``what`` and saying ``then`` when it still leaves some."""
        for start in range(0, len(keys), _BATCH_GET):
            request: dict[str, Any] = {
                self.table: {"Keys": keys[start : start + _BATCH_GET], "ConsistentRead": True, **read}
            }
            for attempt in range(_BATCH_GET_ATTEMPTS):
                page = self.dynamodb.batch_get_item(RequestItems=request)
                yield from page["Responses"].get(self.table, [])
                request = page.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(0.05 * 2**attempt)
            else:
                raise AwsError(f"DynamoDB left {what} unread after retries (throttled): {then}")

    def _query_items(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item a Query returns, page after page."""
        request = dict(request)
        while True:
            page = self.dynamodb.query(**request)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def written(self, write: Callable[..., Any], /, *args: Any, **request: Any) -> bool:
        """Whether the conditional write ``write(*args, **request)`` landed: False where its condition
        refused it (``refusal``); any other failure raises."""
        try:
            write(*args, **request)
        except ClientError as error:
            if refusal(error) is None:
                raise
            return False
        return True

    def _transact_write(self, items: list[dict[str, Any]]) -> None:
        """TransactWriteItems, retried with backoff while DynamoDB cancels it only for a conflict with
        another transaction on the same items (never when a condition failed: that is an answer)."""
        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                self.dynamodb.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
                return
            except ClientError as error:
                if code_of(error) != TRANSACTION_CANCELED:
                    raise
                codes = {r.get("Code") for r in reasons(error)}
                if "TransactionConflict" not in codes or "ConditionalCheckFailed" in codes:
                    raise
                if attempt == _CONFLICT_ATTEMPTS - 1:
                    raise
                time.sleep(0.02 * 2**attempt * (1 + random.random()))


@dataclass(frozen=True)
class Merged:
    """A merged read: its items; whether there may be more; and where the next page starts (after
    this place in the order: the last item's, or where the reading stopped)."""

    items: list[dict[str, Any]]
    more: bool
    after: Any


def _ordered(item: dict[str, Any], order: str) -> Any:
    """An item's place in its index: its ``order`` attribute, a number or a string."""
    attribute = item[order]
    return float(attribute["N"]) if "N" in attribute else attribute["S"]


class _Stream:
    """One shard's Query, read page by page: the items read and not yet taken, and how far it was read
    (every item up to ``read_to`` that the Query returns has been returned)."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.items: deque[dict[str, Any]] = deque()
        self.done = False
        self.read_to: Any = None

    def read_more(self, dynamodb: Any, order: str, limit: int) -> None:
        page = dynamodb.query(**self.request, Limit=max(1, limit))
        self.items.extend(page.get("Items", []))
        last = page.get("LastEvaluatedKey")
        if last is None:
            self.done = True
        else:
            self.request["ExclusiveStartKey"] = last
            self.read_to = _ordered(last, order)
