"""resumable's clients read botocore's data with resumable.aws.loader: whether a service has a model is
asked of that service's folder alone, and JSON is read into plain dicts. The answers, the models and
the search paths are botocore's own; only the work done to reach them is less."""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import Loader

from resumable.aws.clients import session
from resumable.aws.loader import ServiceLoader, loader

KINDS = ("service-2", "endpoint-rule-set-1", "paginators-1", "waiters-2")
# Names that are services, that are not, and that are not names of a folder at all.
NAMES = ("dynamodb", "s3", "lambda", "stepfunctions", "events", "sqs", "nosuch", "endpoints", "", ".", "..", "s3/..")


def _keys_in_order(data: Any) -> Any:
    """Every mapping's keys in order, all the way down (what an OrderedDict would have kept)."""
    if isinstance(data, dict):
        return [(key, _keys_in_order(value)) for key, value in data.items()]
    if isinstance(data, list):
        return [_keys_in_order(item) for item in data]
    return data


def test_making_a_client_reads_its_own_services_folder_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    ours = loader(None)
    listed: list[str] = []
    real = os.listdir

    def listdir(path: str) -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    for kind in ("service-2", "endpoint-rule-set-1"):  # (what making a client asks for)
        ours.load_service_model("dynamodb", kind)
    assert listed, "the loader asked nothing of the disk"
    assert {Path(path).name for path in listed} == {"dynamodb"}, listed


@pytest.mark.parametrize("kind", KINDS)
def test_which_services_there_are_is_botocores_answer(kind: str) -> None:
    theirs, ours = Loader().list_available_services(kind), loader(None).list_available_services(kind)
    assert {name: name in ours for name in NAMES} == {name: name in theirs for name in NAMES}
    assert list(ours) == theirs and len(ours) == len(theirs) and ours[0] == theirs[0] and ours[-2:] == theirs[-2:]
    assert all(name in ours for name in theirs[:20])  # (looked up once listed, too)


def test_models_and_endpoints_are_botocores_in_the_same_order_as_plain_dicts() -> None:
    theirs, ours = Loader(), loader(None)
    asks: list[Callable[[Loader], Any]] = [
        lambda load: load.load_service_model("dynamodb", "service-2"),  # (gzipped in botocore's data)
        lambda load: load.load_service_model("s3", "endpoint-rule-set-1"),
        lambda load: load.load_data("endpoints"),  # (plain JSON)
    ]
    for ask in asks:
        expected, got = ask(theirs), ask(ours)
        assert isinstance(expected, OrderedDict) and type(got) is dict
        assert got == expected and _keys_in_order(got) == _keys_in_order(expected)


def test_a_data_path_is_searched_first_as_botocore_searches_it(tmp_path: Path) -> None:
    model = tmp_path / "made-up" / "2020-01-01" / "service-2.json"
    model.parent.mkdir(parents=True)
    model.write_text(json.dumps({"metadata": {"endpointPrefix": "made-up"}, "operations": {}, "shapes": {}}))
    ours = loader(os.pathsep.join([str(tmp_path), str(tmp_path / "absent")]))
    assert ours.search_paths[:2] == [str(tmp_path), str(tmp_path / "absent")]
    assert "made-up" in ours.list_available_services("service-2")
    assert ours.load_service_model("made-up", "service-2")["metadata"] == {"endpointPrefix": "made-up"}
    assert "made-up" not in loader(None).list_available_services("service-2")


def test_an_unknown_service_is_refused_as_botocore_refuses_it() -> None:
    with pytest.raises(UnknownServiceError, match=r"Unknown service: 'nosuch'. Valid service names are: .*dynamodb"):
        loader(None).load_service_model("nosuch", "service-2")


def test_the_process_session_reads_with_the_service_loader() -> None:
    assert isinstance(session().get_component("data_loader"), ServiceLoader)
    assert "dynamodb" in session().get_available_services()
