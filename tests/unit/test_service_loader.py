"""resumable's botocore sessions (the AWS clients', BedrockModel's) read botocore's data with
resumable.botocore_data: whether a service has a model is asked of that service's folder alone, and
JSON is read into plain dicts. The answers, the models and the search paths are botocore's own (each
test holds the loader against botocore's ``Loader``); only the work done to reach them is less."""

from __future__ import annotations

import gzip
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import Loader, create_loader

from resumable.aws.clients import session
from resumable.botocore_data import ServiceLoader, loader, new_session
from resumable.runtime.models.bedrock import _session as bedrock_session

KINDS = ("service-2", "endpoint-rule-set-1", "paginators-1", "waiters-2")
# Names that are services, that are not, that are files in botocore's data, that differ from a
# service's only in case, and that are not the name of a folder at all.
NAMES = (
    *("dynamodb", "s3", "lambda", "stepfunctions", "events", "sqs", "nosuch"),
    *("endpoints", "endpoints.json", "_retry.json", "partitions.json", "DynamoDB"),
    *("", ".", "..", "s3/..", "s3/", "/"),
)


def _keys_in_order(data: Any) -> Any:
    """Every mapping's keys in order, all the way down (what an OrderedDict would have kept)."""
    if isinstance(data, dict):
        return [(key, _keys_in_order(value)) for key, value in data.items()]
    if isinstance(data, list):
        return [_keys_in_order(item) for item in data]
    return data


def _same_data(ours: Any, theirs: Any) -> None:
    assert isinstance(theirs, OrderedDict) and type(ours) is dict
    assert ours == theirs and _keys_in_order(ours) == _keys_in_order(theirs)


def test_making_a_client_reads_its_own_services_folder_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    made = new_session()
    listed: list[str] = []
    real = os.listdir

    def listdir(path: str) -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    made.create_client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    data = Path(Loader.BUILTIN_DATA_PATH)
    # (the data folder's own entries are read once, to match a name exactly; no other service's folder)
    assert {Path(path) for path in listed if Path(path).parent == data} == {data / "dynamodb"}, listed
    assert listed.count(str(data)) <= 1, listed


@pytest.mark.parametrize("kind", KINDS)
def test_which_services_there_are_is_botocores_answer(kind: str) -> None:
    theirs, ours = Loader(), loader(None)
    listed = theirs.list_available_services(kind)
    assert {name: ours.has_service(name, kind) for name in NAMES} == {name: name in listed for name in NAMES}
    assert ours.list_available_services(kind) == listed  # (botocore's list, whole, where it is asked for)


@pytest.mark.parametrize("name", NAMES)
def test_a_name_that_is_no_service_is_refused_as_botocore_refuses_it(name: str) -> None:
    if name in Loader().list_available_services("service-2"):
        return
    with pytest.raises(UnknownServiceError) as theirs:
        Loader().load_service_model(name, "service-2")
    with pytest.raises(UnknownServiceError) as ours:
        loader(None).load_service_model(name, "service-2")
    assert str(ours.value) == str(theirs.value) and "dynamodb" in str(ours.value)


def test_models_and_endpoints_are_botocores_in_the_same_order_as_plain_dicts() -> None:
    theirs, ours = Loader(), loader(None)
    asks: list[Callable[[Loader], Any]] = [
        lambda load: load.load_service_model("dynamodb", "service-2"),  # (gzipped in botocore's data)
        lambda load: load.load_service_model("s3", "service-2"),  # (with botocore's sdk-extras applied)
        lambda load: load.load_service_model("s3", "endpoint-rule-set-1"),
        lambda load: load.load_data("endpoints"),  # (plain JSON)
    ]
    for ask in asks:
        _same_data(ask(ours), ask(theirs))


def test_a_data_path_is_expanded_and_searched_first_as_botocore_searches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MODELS", "models")
    data_path = os.pathsep.join(["~/$MODELS", str(tmp_path / "absent")])
    assert loader(data_path).search_paths == create_loader(data_path).search_paths
    models = tmp_path / "models"
    # A service of its own, and a newer DynamoDB model that wins over botocore's.
    for name, version in (("made-up", "2020-01-01"), ("dynamodb", "2099-01-01")):
        (models / name / version).mkdir(parents=True)
        model = {"metadata": {"endpointPrefix": name, "apiVersion": version}, "operations": {}, "shapes": {}}
        (models / name / version / "service-2.json").write_text(json.dumps(model))
    # Both a plain and a gzipped file for one name: botocore reads the plain one.
    (models / "both.json").write_text(json.dumps({"read": "plain"}))
    with gzip.open(models / "both.json.gz", "wt") as gzipped:
        gzipped.write(json.dumps({"read": "gzipped"}))
    theirs, ours = create_loader(data_path), loader(data_path)
    for name in ("made-up", "dynamodb"):
        assert ours.has_service(name, "service-2") and name in theirs.list_available_services("service-2")
        assert ours.load_service_model(name, "service-2") == theirs.load_service_model(name, "service-2")
    assert ours.load_service_model("dynamodb", "service-2")["metadata"]["apiVersion"] == "2099-01-01"
    assert ours.load_data("both") == theirs.load_data("both") == {"read": "plain"}
    assert not loader(None).has_service("made-up", "service-2")


def test_sessions_read_with_the_service_loader_on_the_environments_data_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(session().get_component("data_loader"), ServiceLoader)  # (the AWS clients')
    assert isinstance(bedrock_session().get_component("data_loader"), ServiceLoader)  # (BedrockModel's)
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    made = new_session().get_component("data_loader")
    assert isinstance(made, ServiceLoader) and made.search_paths[0] == str(tmp_path)
    assert "dynamodb" in new_session().get_available_services()
