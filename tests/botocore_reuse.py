"""In a test process, botocore clients of one service share what botocore would make the same for each.

The tests make a new Service for each process they stand in for (a restart, a rival invocation, a
reader), each with clients of its own: some 5,000 clients in the integration tier alone. botocore makes
each one from scratch: the service's model and its shapes, a class with a method (a closure and a
docstring) per operation, and the endpoint rules as a tree of objects. A client is a reference cycle, so
all of that is left to the garbage collector, which walked it again and again: about a fifth of the
integration tier's CPU time went to making and collecting those copies.

Here, in the tests' own processes only, the three are made once per service and shared:

- the ``ServiceModel`` (the loader already shares the JSON it is read from);
- the client class (its methods call ``self._make_api_call``: nothing of one client is in them);
- the ``EndpointProvider`` (a pure function of the rules and the partitions, whose answers botocore
  already caches).

The class is made once per session: a ``creating-client-class`` handler registered on a session after
its first client of a service is not applied to that service's later clients (botocore's and boto3's
are registered as a session is made; resumable and the tests register none).

What each client keeps of its own is what a test may change or look at: its event emitter (a test
registers a fault, a pause or a count on one process's client and no other), its endpoint and its
connection pool, its credentials and config. tests/unit/test_botocore_reuse.py holds both sides.
Nothing of this ships: Lambda's clients come from the runtime's botocore, which resumable does not pin,
and a function makes each of its clients once.
"""

from __future__ import annotations

import threading
from typing import Any

import botocore.client
import botocore.regions

_lock = threading.RLock()  # (a creating-client-class handler may make a client itself)
# Each value keeps what its key names by id() alive, so that no id is reused for another object.
_models: dict[tuple[int, str, str | None], tuple[Any, Any]] = {}
_classes: dict[tuple[int, str, int], tuple[Any, Any, type]] = {}
_providers: dict[tuple[int, int, str], tuple[Any, Any, Any]] = {}

# (botocore's own, private to it, and so not in its type stubs: pinned by constraints.txt)
_load_service_model = getattr(botocore.client.ClientCreator, "_load_service_model")  # noqa: B009
_create_client_class = getattr(botocore.client.ClientCreator, "_create_client_class")  # noqa: B009
_EndpointProvider = getattr(botocore.regions, "EndpointProvider")  # noqa: B009


def _shared_model(creator: Any, service_name: str, api_version: str | None = None) -> Any:
    key = (id(creator._loader), service_name, api_version)
    with _lock:
        if key not in _models:
            _models[key] = (creator._loader, _load_service_model(creator, service_name, api_version))
        return _models[key][1]


def _shared_class(creator: Any, service_name: str, service_model: Any) -> type:
    # (per session: its emitter's creating-client-class handlers, as they were then, may add to the class)
    key = (id(creator._event_emitter), service_name, id(service_model))
    with _lock:
        if key not in _classes:
            made = _create_client_class(creator, service_name, service_model)
            _classes[key] = (creator._event_emitter, service_model, made)
        return _classes[key][2]


def _shared_provider(ruleset_data: Any, partition_data: Any, **options: Any) -> Any:
    key = (id(ruleset_data), id(partition_data), repr(sorted(options.items())))
    with _lock:
        if key not in _providers:
            made = _EndpointProvider(ruleset_data=ruleset_data, partition_data=partition_data, **options)
            _providers[key] = (ruleset_data, partition_data, made)
        return _providers[key][2]


def apply() -> None:
    """From now on, in this process (idempotent)."""
    setattr(botocore.client.ClientCreator, "_load_service_model", _shared_model)  # noqa: B010
    setattr(botocore.client.ClientCreator, "_create_client_class", _shared_class)  # noqa: B010
    setattr(botocore.regions, "EndpointProvider", _shared_provider)  # noqa: B010
