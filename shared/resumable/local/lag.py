"""Reads that lag, as DynamoDB's do: the embedded AWS can serve index reads, and reads without
``ConsistentRead``, from a view of the table as it was a little while ago.

On DynamoDB a global secondary index is always eventually consistent, and so is a base-table
``GetItem``, ``BatchGetItem``, ``Query`` or ``Scan`` that does not ask for ``ConsistentRead``: for a
moment after a write such a read may miss a new item, show an item's old version, or still show one
that was deleted (or that moved out of the index). moto shows every write at once. With the lag on:

- every write (a put, an update, a delete, each item of a transaction) reaches the lagging reads only
  after some more DynamoDB requests to this embedded AWS: a number drawn for each write, from ``least``
  to ``most``, by a generator seeded with ``seed`` (the same requests in the same order lag the same
  way). An item's writes reach them in the order they were made (a later version never shows before
  an earlier one), and the writes of one request show as one (moto builds an update of a new item in
  two steps, which nothing may see). A lag counted in requests, not seconds, is deterministic, and a
  reader that polls moves it on: what it waits for shows after a bounded number of reads;
- ``Query`` with ``IndexName``, and ``GetItem``, ``BatchGetItem`` (per table), ``Query`` and ``Scan``
  without ``ConsistentRead``, read that view; ``ConsistentRead`` reads, ``TransactGetItems`` and
  every write (its conditions included) see the table as it is, as on DynamoDB;
- a transaction that is refused leaves no write behind, lagging or not.

Writes are seen where moto records them for the table's stream, which every table the bundle makes
has (a table without a stream never lags). The books of a write close once every lagging read sees it.

The lag is off unless asked for: ``RESUMABLE_INDEX_LAG`` (``N``: each write lags 0 to N requests;
``M-N``: M to N) and ``RESUMABLE_INDEX_LAG_SEED`` (an integer; 1) in the environment of the process
that runs the embedded AWS, or ``lagging(most, seed=, least=)`` around a block of a test (``LAG.stale_reads``
counts the reads served while a write was hidden from them).
"""

from __future__ import annotations

import copy
import os
import random
import re
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# An item's key in its table's books: (hash key value, range key value or None).
_Key = tuple[Any, Any]
_PRUNE_EVERY = 1000  # (requests: the books of items every lagging read sees again are closed this often)


@dataclass
class _Write:
    request: int  # the request that made it
    shows_at: int  # the first request whose lagging reads see it
    image: Any  # the item after it (a copy), or None: deleted


@dataclass
class _Books:
    """Of each item of a table with writes the lagging reads do not see yet: what they see (None: no
    item), and those writes, oldest first."""

    seen: dict[_Key, Any] = field(default_factory=dict)
    pending: dict[_Key, list[_Write]] = field(default_factory=dict)


@dataclass
class _Lag:
    least: int = 0
    most: int = 0
    seed: int = 1
    requests: int = 0
    stale_reads: int = 0  # (reads served while some write was still hidden from them: the lag at work)
    rng: random.Random = field(default_factory=random.Random)
    # Each table's books, by the table itself (moto's object; moto keeps a deleted one, whose books close
    # as its writes show).
    books: weakref.WeakKeyDictionary[Any, _Books] = field(default_factory=weakref.WeakKeyDictionary)
    undo: list[Callable[[], None]] | None = None  # (while a transaction runs: how to take its writes back)

    @property
    def on(self) -> bool:
        return self.most > 0


LAG = _Lag()


def configure(most: int, seed: int = 1, least: int = 0) -> None:
    """Lag each write ``least`` to ``most`` requests (0: the lag is off), drawn under ``seed``; what
    was hidden shows at once."""
    if not 0 <= least <= most:
        raise ValueError(f"the lag's least ({least}) must be 0 or more and at most its most ({most})")
    with _between_requests():
        LAG.least, LAG.most, LAG.seed = least, most, seed
        LAG.rng = random.Random(seed)
        LAG.books = weakref.WeakKeyDictionary()


# The embedded AWS's one-request-at-a-time lock (moto_patches.REQUESTS, given to ``apply``).
_REQUESTS: list[Any] = []


@contextmanager
def _between_requests() -> Iterator[None]:
    if not _REQUESTS:
        yield
        return
    with _REQUESTS[0].held():
        yield


def configure_from_environment() -> None:
    """``RESUMABLE_INDEX_LAG`` and ``RESUMABLE_INDEX_LAG_SEED`` (see the module); nothing when unset."""
    text = os.environ.get("RESUMABLE_INDEX_LAG", "").strip()
    if not text:
        return
    seed_text = os.environ.get("RESUMABLE_INDEX_LAG_SEED", "1").strip() or "1"
    given = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
    if given is None or not re.fullmatch(r"-?\d+", seed_text) or (given[2] and int(given[1]) > int(given[2])):
        raise SystemExit(
            f"RESUMABLE_INDEX_LAG={text!r}, RESUMABLE_INDEX_LAG_SEED={seed_text!r}: give the lag as N or M-N "
            "requests (whole numbers, M at most N) and the seed as a whole number; the embedded AWS did not start"
        )
    least, most = (int(given[1]), int(given[2])) if given[2] else (0, int(given[1]))
    configure(most, seed=int(seed_text), least=least)


@contextmanager
def lagging(most: int, seed: int = 1, least: int = 0) -> Iterator[None]:
    """The lag on for the block (see ``configure``), and as it was after it (an outer block's lag goes
    on where it was)."""
    with _between_requests():
        before = (LAG.most, LAG.seed, LAG.least, LAG.rng, LAG.books)
    configure(most, seed, least)
    try:
        yield
    finally:
        with _between_requests():
            LAG.most, LAG.seed, LAG.least, LAG.rng, LAG.books = before


def _written(table: Any, old: Any, new: Any) -> None:
    """A write moto made to ``table`` (through its stream's books: every put, update and delete)."""
    item = new if new is not None else old
    if not LAG.on or item is None:
        return
    books = LAG.books.setdefault(table, _Books())
    key = (item.hash_key, item.range_key if table.range_key_attr else None)
    image = copy.deepcopy(new)  # (moto updates an item in place)
    writes = books.pending.get(key)
    if writes is None:
        books.seen[key], books.pending[key] = old, [_Write(LAG.requests, LAG.requests + _drawn(), image)]
        _undo(lambda: (books.seen.pop(key, None), books.pending.pop(key, None)))
    elif writes[-1].request == LAG.requests:  # (a write of the same request: it shows as one)
        last, kept = writes[-1], writes[-1].image
        last.image = image
        _undo(lambda: setattr(last, "image", kept))
    else:
        writes.append(_Write(LAG.requests, max(LAG.requests + _drawn(), writes[-1].shows_at), image))
        _undo(writes.pop)


def _drawn() -> int:
    return LAG.rng.randint(LAG.least, LAG.most)


def _undo(step: Callable[[], Any]) -> None:
    if LAG.undo is not None:
        LAG.undo.append(step)


def _view(table: Any) -> Any:
    """``table.items`` as the lagging reads see it now: each item as of its last write they see."""
    books = LAG.books.get(table)
    behind = [key for key in list(books.pending) if not _caught_up(books, key)] if books else []
    if not behind:
        return table.items
    assert books is not None
    LAG.stale_reads += 1
    view = copy.copy(table.items)  # (a shallow copy: a defaultdict stays one)
    for key in behind:
        hash_value, range_value = key
        item = books.seen[key]
        if table.range_key_attr is None:
            if item is None:
                view.pop(hash_value, None)
            else:
                view[hash_value] = item
            continue
        partition = dict(view.get(hash_value, {}))
        if item is None:
            partition.pop(range_value, None)
        else:
            partition[range_value] = item
        view[hash_value] = partition
    return view


def _caught_up(books: _Books, key: _Key) -> bool:
    """Whether the lagging reads see every write of ``key`` now (its books are then closed)."""
    writes = books.pending[key]
    while writes and writes[0].shows_at <= LAG.requests:
        books.seen[key] = writes.pop(0).image
    if writes:
        return False
    del books.pending[key], books.seen[key]
    return True


def _prune() -> None:
    """Close the books of every item the lagging reads see whole again (read or not), and of every
    table whose items they all see."""
    for table, books in list(LAG.books.items()):
        for key in list(books.pending):
            _caught_up(books, key)
        if not books.pending:
            del LAG.books[table]


def _lagging_tables(action: str, body: dict[str, Any]) -> list[str]:
    """The tables a request reads from the lagging view."""
    if action == "batch_get_item":
        requested = body.get("RequestItems") or {}
        return [name for name, asked in requested.items() if not (asked or {}).get("ConsistentRead")]
    if action == "query" and body.get("IndexName"):
        return [str(body.get("TableName"))]
    return [] if body.get("ConsistentRead") else [str(body.get("TableName"))]


def apply(requests: Any) -> None:
    """Give moto's DynamoDB the lag's books and views (off until configured), once per process;
    ``requests``: the lock the embedded AWS serves one request at a time under."""
    if not _REQUESTS:
        _REQUESTS.append(requests)
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import StreamShard
    from moto.dynamodb.responses import DynamoHandler

    if getattr(StreamShard.add, "lag_books", False):
        return
    add = StreamShard.add

    def add_and_book(self: Any, old: Any, new: Any) -> None:
        add(self, old, new)
        _written(self.table, old, new)

    add_and_book.lag_books = True  # type: ignore[attr-defined]
    StreamShard.add = add_and_book  # type: ignore[method-assign]

    call_action = DynamoHandler.call_action

    def counted(self: Any) -> Any:
        LAG.requests += 1
        if LAG.books and LAG.requests % _PRUNE_EVERY == 0:
            _prune()
        return call_action(self)

    DynamoHandler.call_action = counted  # type: ignore[method-assign]

    for action in ("get_item", "batch_get_item", "query", "scan"):
        setattr(DynamoHandler, action, _reading(action, getattr(DynamoHandler, action)))

    transact = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        if LAG.undo is not None:  # (inside another of these: it takes the writes back)
            transact(self, transact_items)
            return
        LAG.undo = []
        try:
            transact(self, transact_items)
        except BaseException:
            for step in reversed(LAG.undo):
                step()
            raise
        finally:
            LAG.undo = None

    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    configure_from_environment()


def _reading(action: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def read(self: Any) -> Any:
        if not LAG.on or not LAG.books:
            return real(self)
        tables = self.dynamodb_backend.tables
        swapped = [(t, t.items) for name in _lagging_tables(action, self.body) if (t := tables.get(name)) is not None]
        for table, _ in swapped:
            table.items = _view(table)
        try:
            return real(self)
        finally:
            for table, items in swapped:
                table.items = items

    return read
