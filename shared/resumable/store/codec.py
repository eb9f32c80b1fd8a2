"""How records become DynamoDB items and back, and where each item lives.

Item layout, all in the session's partition ``pk = SESSION#<sessionId>``:

| item | sk |
|---|---|
| session | ``SESSION`` |
| root turn | ``TURN#<root>`` |
| child turn | ``TURN#<root>#CHILD#<turnId>`` |
| interaction | ``TURN#<root>#INTERACTION#<requestId>`` |
| action journal entry | ``TURN#<root>#ACTION#<sha256 of the key>`` |
| outbox event | ``TURN#<root>#EVENT#...`` |

An interaction is also in GSI1 (the session's, by status), in GSI5 (by its ``request_id`` alone, keys
only) and, while requested, in GSI2 and GSI3 (the inbox: every session's, and its principal's, by
expiry). An unsettled root turn is in GSI4 (the
sweeper's, by when it is due a look: ``due``). So a whole turn tree is one Query. Every change to a
tree goes through a condition on the root turn.

An index that holds every session's items (GSI2's inbox, GSI4's partitions) is sharded: a session's
items go to one of ``Settings.index_shards`` partitions, chosen by its id (``sharded``), so that no
partition key takes the whole deployment's writes; a read asks every shard and merges
(``Table.merged``). Shard 0 keeps the unsharded name, so items written before there were shards, or
with one shard, are read as shard 0.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable
from typing import Any

from resumable.runtime.rules import RISKS
from resumable.store.records import InteractionRecord, OutboxEvent, TurnRecord

# Fields held as JSON text: any JSON survives unchanged (DynamoDB has no float type).
JSON_FIELDS = frozenset({"reason", "response", "result", "detail", "input", "input_schema", "rule", "votes"})


_NUMBERS = (int, float)


def value(python: Any) -> dict[str, Any]:
    """A DynamoDB attribute value."""
    if type(python) is str:  # (most are: the rest of the checks only for what is not)
        return {"S": python}
    if python is None:
        return {"NULL": True}
    if isinstance(python, bool):
        return {"BOOL": python}
    if isinstance(python, _NUMBERS):
        return {"N": repr(python)}
    if isinstance(python, str):
        return {"S": python}
    if isinstance(python, list):
        return {"L": [value(v) for v in python]}
    if isinstance(python, dict):
        return {"M": {k: value(v) for k, v in python.items()}}
    raise TypeError(f"cannot store {type(python).__name__} in DynamoDB: {python!r}")


def python(attribute: dict[str, Any]) -> Any:
    """The Python value of a DynamoDB attribute value."""
    kind, raw = next(iter(attribute.items()))
    if kind == "NULL":
        return None
    if kind == "N":
        return float(raw) if any(c in raw for c in ".eE") else int(raw)
    if kind == "L":
        return [python(v) for v in raw]
    if kind == "M":
        return {k: python(v) for k, v in raw.items()}
    return raw


def encode(fields: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: value(json.dumps(v) if k in JSON_FIELDS else v) for k, v in fields.items()}


def present(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without those that hold nothing. A turn or question written whole leaves out what is
    None (a missing attribute reads back as the record's default, None): each absent one is its name
    and a byte less to store, to write and to pay for, on every index the item is in too. Every
    condition on such an attribute asks for it missing or NULL alike (``attribute_not_exists(x) OR
    attribute_type(x, NULL)``): an item written before, with NULLs, reads the same. Only None: a turn's
    conditions compare some defaults as stored (``cancel_requested = false``, ``version``), so a turn
    keeps what holds its default; a session's item keeps its NULLs (the next turn's start asks for its
    ``snapshot_key`` NULL where it has no conversation yet)."""
    return {k: v for k, v in fields.items() if v is not None}


def decode(item: dict[str, Any]) -> dict[str, Any]:
    fields = {k: python(v) for k, v in item.items()}
    for name in JSON_FIELDS & fields.keys():
        fields[name] = json.loads(fields[name])
    return fields


def shard_of(session_id: str, shards: int) -> int:
    """Which of ``shards`` partitions of a sharded index holds ``session_id``'s items: the same in every
    process and release (CRC-32 of the id, not Python's salted ``hash``)."""
    return zlib.crc32(session_id.encode()) % shards


def sharded(base: str, session_id: str, shards: int) -> str:
    """The partition key of ``session_id``'s items in the sharded partition ``base``: ``base`` itself
    for shard 0, ``<base>#<n>`` for shard n."""
    n = shard_of(session_id, shards)
    return base if n == 0 else f"{base}#{n}"


def shards_of(base: str, shards: int) -> list[str]:
    """Every partition key of the sharded partition ``base``, shard 0 first."""
    return [base, *(f"{base}#{n}" for n in range(1, shards))]


def pk(session_id: str) -> str:
    return f"SESSION#{session_id}"


def key(session_id: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk(session_id)}, "sk": {"S": sk}}


def root_sk(root_turn_id: str) -> str:
    return f"TURN#{root_turn_id}"


def turn_sk(turn: TurnRecord) -> str:
    if turn.parent_turn_id is None:
        return root_sk(turn.turn_id)
    return f"TURN#{turn.root_turn_id}#CHILD#{turn.turn_id}"


def interaction_sk(root_turn_id: str, request_id: str) -> str:
    return f"TURN#{root_turn_id}#INTERACTION#{request_id}"


def action_sk(root_turn_id: str, action_key: str) -> str:
    return f"TURN#{root_turn_id}#ACTION#{hashlib.sha256(action_key.encode()).hexdigest()}"


def turn_item(turn: TurnRecord, shards: int) -> dict[str, Any]:
    index = sweeper_keys(turn, shards) or {}
    # (a callback's fields only where a durable function waits; what is None not at all: ``present``)
    callback = {"callback_id", "callback_told", "callback_heartbeat"}
    fields = present(turn.model_dump(exclude=callback if turn.callback_id is None else None))
    return {**key(turn.session_id, turn_sk(turn)), **encode({"entity": "turn", **index, **fields})}


UNSETTLED = "UNSETTLED"
CALLBACK_GRACE = 60.0
"""How long after a turn settled the sweeper first looks whether the durable function that waits on it was
told (the settling invocation tells it at once; this is for one that died first)."""
STUCK = "STUCK"
EXPIRING = "EXPIRING"
DUE_KEYS = ("gsi4pk", "gsi4sk")


def sweeper_keys(turn: TurnRecord, shards: int, asked: Iterable[InteractionRecord] = ()) -> dict[str, Any] | None:
    """Where a root turn is in the sweeper's index (in its session's shard of ``shards``): unsettled,
    by when it is due a look (``due``); settled, by when its retention ends. None for a child turn (or
    a settled root with no retention)."""
    if turn.parent_turn_id is not None:
        return None
    if turn.settled:
        if turn.callback_id is not None and turn.callback_told is None:
            # (a durable function waits to be told: due a look once its settling had time to tell it)
            return {"gsi4pk": sharded(UNSETTLED, turn.session_id, shards), "gsi4sk": turn.updated_at + CALLBACK_GRACE}
        if turn.purge_at is None:
            return None
        return {"gsi4pk": sharded(EXPIRING, turn.session_id, shards), "gsi4sk": turn.purge_at}
    return {"gsi4pk": sharded(UNSETTLED, turn.session_id, shards), "gsi4sk": due(turn, asked)}


def due(turn: TurnRecord, asked: Iterable[InteractionRecord] = ()) -> float:
    """When the sweeper should look at unsettled root turn ``turn`` next if nothing else writes it: the
    earliest moment it could need moving on (its lease's expiry; its first question's expiry or
    escalation, of those just ``asked``; otherwise at once, and the sweeper finds out when), or its
    durable function's next heartbeat. Never later than that: a look that comes early costs one look,
    and the sweeper sets the next."""
    moved = _moved(turn, asked)
    beat = heartbeat_due(turn, turn.updated_at)
    return moved if beat is None else min(moved, beat)


def heartbeat_due(turn: TurnRecord, since: float) -> float | None:
    """When the durable function waiting on unsettled ``turn`` should next hear from the sweeper, last
    heard from at ``since``: a third of its heartbeat timeout on (None: it asked for no heartbeat)."""
    if turn.callback_heartbeat is None or turn.callback_told is not None:
        return None
    return since + turn.callback_heartbeat / 3


def _moved(turn: TurnRecord, asked: Iterable[InteractionRecord]) -> float:
    if turn.status == "running" and turn.lease_owner is not None and turn.lease_expires_at is not None:
        return turn.lease_expires_at
    if turn.status == "waiting" and not turn.cancel_requested:
        expiries = [i.expires_at for i in asked if i.status == "requested"]
        if expiries and len(expiries) >= turn.open_interactions > 0:
            escalations = [at for i in asked if (at := i.escalates_at) is not None]
            return min(expiries + escalations)
    return turn.updated_at


INBOX = "INBOX"
INBOX_KEYS = ("gsi2pk", "gsi2sk", "gsi3pk", "gsi3sk")


URGENCY_SECONDS = 3600
"""The inbox's unit of urgency: questions due within the same hour are ordered by risk, then by expiry."""


def inbox_sort_key(expires_at: float, session_id: str, request_id: str, risk: str | None = None) -> str:
    """Most urgent first: the hour it expires in, then the riskiest (``destructive`` first), then the
    expiry; fixed-width numbers, so that text order is that order."""
    due = expires_at - expires_at % URGENCY_SECONDS
    order = len(RISKS) - 1 - RISKS.index(risk) if risk in RISKS else len(RISKS)  # (destructive 0 ... none 4)
    return f"{due:020.6f}#{order}#{expires_at:020.6f}#{session_id}#{request_id}"


def inbox_unexpired_after(now: float) -> str:
    """Every sort key of an interaction that could be unexpired at ``now`` is greater than this (its
    hour began at or after the start of ``now``'s hour); those of the hour that expired before ``now``
    are filtered out by their ``expires_at``."""
    return f"{now - now % URGENCY_SECONDS:020.6f}#"


def principal_inbox(principal: str) -> str:
    return f"PRINCIPAL#{principal}"


def interaction_item(interaction: InteractionRecord, shards: int) -> dict[str, Any]:
    inbox: dict[str, str] = {}
    if interaction.status == "requested":
        order = inbox_sort_key(interaction.expires_at, interaction.session_id, interaction.request_id, interaction.risk)
        inbox = {"gsi2pk": sharded(INBOX, interaction.session_id, shards), "gsi2sk": order}
        if interaction.principal is not None:
            inbox |= {"gsi3pk": principal_inbox(interaction.principal), "gsi3sk": order}
    return {
        **key(interaction.session_id, interaction_sk(interaction.root_turn_id, interaction.request_id)),
        **encode(
            {
                "entity": "interaction",
                "gsi1pk": f"SESSION#{interaction.session_id}#INTERACTIONS",
                "gsi1sk": f"{interaction.status}#{interaction.request_id}",
                **inbox,
                # (and what holds its default: no vote, no dismissal, not editable; each condition on
                # those asks for it missing or as read alike, and reading gives back the default)
                **interaction.model_dump(exclude_defaults=True),
            }
        ),
    }


def event_put(table: str, session_id: str, sk: str, event: OutboxEvent) -> dict[str, Any]:
    """The transaction item that writes an outbox event under ``sk``."""
    return {
        "Put": {
            "TableName": table,
            "Item": {**key(session_id, sk), **encode({"entity": "event", **event.model_dump()})},
        }
    }
