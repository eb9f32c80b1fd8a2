"""The one reader of request bodies: for any text, a JSON object within the limits, or a 400/422 error
that says why; never another exception (a RecursionError or UnicodeEncodeError used to escape)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resumable.api.bodies import MAX_BODY_BYTES, MAX_DEPTH, depth, read_json_object
from resumable.exceptions import BadRequestError, ValidationFailedError

# Every code point, lone surrogates among them: JSON can carry them (as \ud800 escapes), UTF-8 cannot.
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=30,
)


def _nesting(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    return 0


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _nested(levels: int, opening: str = "[") -> str:
    closing = {"[": "]", "{": "}"}[opening]
    inner = '{"a": ' * levels + "1" + "}" * levels if opening == "{" else opening * levels + closing * levels
    return '{"response": ' + inner + "}"


@settings(max_examples=300, deadline=None)
@given(value=_JSON)
def test_any_json_value_is_read_back_exactly_when_it_is_an_object_within_the_limits(value: Any) -> None:
    text = json.dumps(value)  # ASCII, so lone surrogates travel as \ud800 escapes, as a client sends them
    assert depth(text) == _nesting(value)
    acceptable = isinstance(value, dict) and _nesting(value) <= MAX_DEPTH and _encodable(value)
    if acceptable:
        assert read_json_object(text) == value
    else:
        with pytest.raises((BadRequestError, ValidationFailedError)):
            read_json_object(text)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.characters(codec=None, exclude_categories=()), max_size=200)
    | st.from_regex(r"[\[\]{}\"\\:,0-9a-z ]*")
)
def test_any_text_is_an_object_or_a_400_or_422_never_another_error(text: str) -> None:
    try:
        assert isinstance(read_json_object(text), dict)
    except (BadRequestError, ValidationFailedError) as refused:
        assert "nothing was done" in str(refused)


@pytest.mark.parametrize("levels", [MAX_DEPTH, MAX_DEPTH + 1, 1_000, 100_000])
@pytest.mark.parametrize("opening", ["[", "{"])
def test_nesting_is_bounded_explicitly_however_deep(levels: int, opening: str) -> None:
    text = _nested(levels - 1, opening)  # the body's own object is one level
    if levels <= MAX_DEPTH:
        assert isinstance(read_json_object(text), dict)
        return
    if len(text.encode()) > MAX_BODY_BYTES:
        with pytest.raises(ValidationFailedError, match="bytes, the limit"):
            read_json_object(text)
        return
    with pytest.raises(ValidationFailedError, match=f"{levels} levels deep, the limit is {MAX_DEPTH}"):
        read_json_object(text)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"prompt": "[" * 1_000 + '\\"{' * 100})
    assert depth(text) == 1
    assert read_json_object(text)["prompt"].startswith("[[[")


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("prompt=delete+prod-db", BadRequestError, "must be a JSON object"),
        ('{"prompt": NaN}', BadRequestError, "NaN is not JSON"),
        ('{"prompt": Infinity}', BadRequestError, "Infinity is not JSON"),
        ('{"n": 1e400}', ValidationFailedError, "too large for a 64-bit float"),
        ('{"n": ' + "9" * 5_000 + "}", ValidationFailedError, "5000 digits"),
        ("[]", BadRequestError, "not an array"),
        ('"x"', BadRequestError, "not a string"),
        ("null", BadRequestError, "not null"),
        ("", BadRequestError, "the body is empty"),
        ('{"prompt": "\\ud800"}', ValidationFailedError, "UTF-8 cannot encode"),
        ('{"\\udfff": 1}', ValidationFailedError, "UTF-8 cannot encode"),
    ],
)
def test_what_is_wrong_with_a_body_is_said_in_words(text: str, error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        read_json_object(text)
