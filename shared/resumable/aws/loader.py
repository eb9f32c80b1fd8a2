"""botocore's loader of its data (service models, endpoints), doing less to make a process's first
client, which a cold start waits for (``make bench`` section 4):

- Whether a service has a model is asked of that service's folder alone. A client's making asks it
  for two kinds of model (``service-2``, ``endpoint-rule-set-1``), and botocore's answer lists every
  service it ships first: some 440 folders read, 17 ms. The full list is still read, in full,
  wherever it is asked for (``Session.get_available_services``).
- JSON is read into plain dicts, not ``OrderedDict``s (botocore's hook, from before dicts kept their
  order): 2.5 times faster, 11 ms of the 1.2 MB endpoints file every client's making reads.

Same files, same search paths (``AWS_DATA_PATH`` first), same answers. Imported only where a session
is made (resumable.aws.clients).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any, overload

from botocore.exceptions import DataNotFoundError
from botocore.loaders import JSONFileLoader, Loader

# The files botocore reads for a data path, in its order (botocore.loaders: plain, then gzipped).
_OPENERS: tuple[tuple[str, Any], ...] = ((".json", open), (".json.gz", gzip.open))


class PlainJSONFileLoader(JSONFileLoader):
    """botocore's JSON file loader, reading into plain dicts."""

    def load_file(self, file_path: str) -> Any:
        for extension, opener in _OPENERS:
            path = file_path + extension
            if os.path.isfile(path):
                with opener(path, "rb") as file:
                    return json.loads(file.read().decode("utf-8"))
        return None


class Services(Sequence[str]):
    """The services that have a ``kind`` model (``service-2``, ...), sorted, as botocore lists them."""

    def __init__(self, loader: Loader, kind: str) -> None:
        self._loader = loader
        self._kind = kind
        self._listed: list[str] | None = None

    def __contains__(self, name: object) -> bool:
        if self._listed is None and isinstance(name, str) and name and os.sep not in name and name[0] != ".":
            try:
                return bool(self._loader.list_api_versions(name, self._kind))
            except DataNotFoundError:
                return False
        return name in self._all()

    def _all(self) -> list[str]:
        if self._listed is None:
            self._listed = list(Loader.list_available_services(self._loader, self._kind))
        return self._listed

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __repr__(self) -> str:
        return f"Services({self._kind!r})"


class ServiceLoader(Loader):
    """botocore's ``Loader``, answering ``list_available_services`` with ``Services``, and reading with
    ``PlainJSONFileLoader``."""

    def __init__(self, extra_search_paths: list[str] | None = None) -> None:
        super().__init__(extra_search_paths=extra_search_paths, file_loader=PlainJSONFileLoader())
        self._services: dict[str, Services] = {}

    # (a sequence, not a list: it is read, never changed, by botocore and by Session.get_available_services)
    def list_available_services(self, type_name: str) -> Services:  # type: ignore[override]
        if type_name not in self._services:
            self._services[type_name] = Services(self, type_name)
        return self._services[type_name]


def loader(data_path: str | None) -> ServiceLoader:
    """The loader botocore's session would make for ``data_path`` (its ``AWS_DATA_PATH``: folders
    searched before its own, separated by ``os.pathsep``), as a ``ServiceLoader``."""
    if data_path is None:
        return ServiceLoader()
    return ServiceLoader([os.path.expanduser(os.path.expandvars(path)) for path in data_path.split(os.pathsep)])
