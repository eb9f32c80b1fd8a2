"""botocore's loader of its data (service models, endpoints), doing less to make a process's first
client, which a cold start waits for (``make bench`` section 4):

- Whether a service has a model is asked of that service's folder alone. A client's making loads two
  kinds of model (``service-2``, ``endpoint-rule-set-1``), and botocore first lists every service it
  ships to see whether the name is one: some 440 folders read, 17 ms. The full list is still read, in
  full, where it is asked for (``list_available_services``, ``Session.get_available_services``), and
  for an unknown service's error, which names them all.
- JSON is read into plain dicts, not ``OrderedDict``s (botocore's hook, from before dicts kept their
  order): 2.5 times faster, 11 ms of the 1.2 MB endpoints file every client's making reads.

Same files, same search paths (``AWS_DATA_PATH`` first), same answers: tests hold it against botocore's
own ``Loader``. A leaf module (it imports botocore alone): the AWS clients' session
(resumable.aws.clients) and ``BedrockModel``'s (the runtime knows nothing of resumable.aws) both come
from ``new_session``, imported where they are made.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any

from botocore.exceptions import DataNotFoundError, UnknownServiceError
from botocore.loaders import JSONFileLoader, Loader, instance_cache

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


class ServiceLoader(Loader):
    """botocore's ``Loader``, reading with ``PlainJSONFileLoader`` and looking a service up by its name."""

    def __init__(self, extra_search_paths: list[str] | None = None) -> None:
        super().__init__(extra_search_paths=extra_search_paths, file_loader=PlainJSONFileLoader())
        self._folders: dict[str, set[str]] = {}  # each search path's entries, read once

    def has_service(self, name: str, type_name: str) -> bool:
        """What ``name in self.list_available_services(type_name)`` answers, from ``name``'s folders
        alone: a folder of that exact name in a search path, holding a version with that model."""
        for path in self.search_paths:
            if path not in self._folders:
                self._folders[path] = set(os.listdir(path)) if os.path.isdir(path) else set()
            if name in self._folders[path] and os.path.isdir(os.path.join(path, name)):
                try:  # (botocore's own look-up of the versions, on every search path)
                    return bool(self.list_api_versions(name, type_name))
                except DataNotFoundError:
                    return False
        return False

    # botocore's, but for how the service's name is checked (its model's extras applied as botocore's).
    @instance_cache
    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        if not self.has_service(service_name, type_name):
            known = self.list_available_services(type_name)
            raise UnknownServiceError(service_name=service_name, known_service_names=", ".join(known))
        if api_version is None:
            api_version = self.determine_latest_version(service_name, type_name)
        model = self.load_data(os.path.join(service_name, api_version, type_name))
        extras = self._find_extras(service_name, type_name, api_version)  # type: ignore[attr-defined]
        self._extras_processor.process(model, extras)  # type: ignore[attr-defined]
        return model


def loader(data_path: str | None) -> ServiceLoader:
    """The loader botocore's session would make for ``data_path`` (its ``AWS_DATA_PATH``: folders
    searched before its own, separated by ``os.pathsep``), as a ``ServiceLoader``."""
    if data_path is None:
        return ServiceLoader()
    return ServiceLoader([os.path.expanduser(os.path.expandvars(path)) for path in data_path.split(os.pathsep)])


def new_session() -> Any:
    """A botocore session reading botocore's data with a ``ServiceLoader`` (on ``AWS_DATA_PATH``, as
    botocore's own loader would)."""
    import botocore.session

    made = botocore.session.get_session()
    made.register_component("data_loader", loader(made.get_config_variable("data_path")))
    return made
