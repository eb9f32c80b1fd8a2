"""The bench's AWS-like latency (bench/latency.py): a call recorded is held until its kind's median has
passed (asked of time.sleep, which these tests record rather than sleep), its modeled time is never
below the median, a call the model does not know fails the run, and nothing is held while the recorder
is off."""

from __future__ import annotations

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


def test_a_call_is_held_until_its_median_and_modeled_at_the_median_plus_botocores_part(
    aws: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hold is asked of ``time.sleep`` (recorded here, not slept): what is left of the median once
    the embedded AWS answered; the call's modeled time is what it took plus that hold."""
    slept: list[float] = []
    monkeypatch.setattr(bench.aws_calls.time, "sleep", slept.append)
    recorder, dynamodb = _recorded(aws, Latency({"dynamodb.GetItem": 0.05}))
    dynamodb.get_item(TableName=aws.table_name, Key=KEY)
    [held] = slept
    assert 0 < held < 0.05
    assert recorder.modeled == pytest.approx(recorder.in_calls + held, abs=0.001)
    assert recorder.modeled >= 0.05
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
