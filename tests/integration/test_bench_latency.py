"""The bench's AWS-like latency (bench/latency.py): a call recorded is held until its kind's median has
passed, its modeled time is never below the median nor above what it took, a call the model does not
know fails the run, and nothing is held while the recorder is off."""

from __future__ import annotations

import time
from typing import Any

import pytest

import bench.aws_calls
from bench.aws_calls import Recorder
from bench.latency import Latency
from resumable.aws.clients import client
from resumable.config import Settings

KEY = {"pk": {"S": "P"}, "sk": {"S": "S"}}


def _recorded(settings: Settings, latency: Latency, on: bool = True) -> tuple[Recorder, Any]:
    recorder = Recorder(on=on, latency=latency)
    dynamodb = client("dynamodb", settings)
    recorder.attach(dynamodb)
    return recorder, dynamodb


def test_a_call_takes_at_least_its_median_and_is_modeled_at_no_less_and_no_more_than_it_took(aws: Settings) -> None:
    recorder, dynamodb = _recorded(aws, Latency({"dynamodb.GetItem": 0.05}))
    started = time.perf_counter()
    dynamodb.get_item(TableName=aws.table_name, Key=KEY)
    took = time.perf_counter() - started
    assert took >= 0.05
    assert 0.05 <= recorder.modeled <= recorder.in_calls <= took
    assert [call.name for call in recorder.take()] == ["dynamodb.GetItem"]
    assert recorder.modeled == recorder.in_calls == 0.0


def test_with_a_median_of_zero_the_call_is_modeled_as_it_took(aws: Settings) -> None:
    recorder, dynamodb = _recorded(aws, Latency({"dynamodb.GetItem": 0.0}))
    dynamodb.get_item(TableName=aws.table_name, Key=KEY)
    assert 0 < recorder.modeled == recorder.in_calls


def test_a_call_the_model_does_not_know_fails_the_run_saying_what_to_add(aws: Settings) -> None:
    _, dynamodb = _recorded(aws, Latency({}))
    with pytest.raises(KeyError, match=r"no median for dynamodb\.GetItem: add one to bench/latency\.py"):
        dynamodb.get_item(TableName=aws.table_name, Key=KEY)


def test_nothing_is_held_or_counted_while_the_recorder_is_off(aws: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(bench.aws_calls.time, "sleep", slept.append)
    recorder, dynamodb = _recorded(aws, Latency({"dynamodb.GetItem": 1.0}), on=False)
    dynamodb.get_item(TableName=aws.table_name, Key=KEY)
    assert (slept, recorder.modeled, recorder.in_calls) == ([], 0.0, 0.0)
    recorder.on = True
    dynamodb.get_item(TableName=aws.table_name, Key=KEY)
    assert len(slept) == 1 and 0.9 < slept[0] < 1.0
