"""A flat object is checked and encoded in one pass, with the same text and the same refusals
as the full check (``check_json``) followed by the encoder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ultimat3_jobs.errors import JobInputInvalid
from ultimat3_jobs.serialization import _flat_text, check_json, encode_json

FLAT: list[Any] = [
    None,
    True,
    False,
    {},
    {"a": 1, "b": "two", "c": None, "d": True, "e": 1.5, "f": -(2**63), "g": 2**63 - 1},
    {"ünï": "cödé ✓", "back\\slash": "a \\ backslash"},
    {"f": 1e15, "g": -1e15},
]
NOT_FLAT: list[Any] = [
    {"nested": {"a": 1}},
    {"list": [1]},
    {"big": 2**63},
    {"float": 1e16},
    {"nan": float("nan")},
    {1: "int key"},
    {"nul": "a\x00b"},
    {"surrogate": "\ud800"},
    {"tuple": (1,)},
    [1, 2],
]


@pytest.mark.parametrize("value", FLAT, ids=repr)
def test_a_flat_object_takes_one_pass_and_the_same_text(value) -> None:
    text = _flat_text(value, max_depth=32)
    assert text is not None
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert not check_json(value, max_depth=32)
    assert encode_json(value, max_depth=32, max_bytes=65536) == text
    assert json.loads(text) == value


@pytest.mark.parametrize("value", [*NOT_FLAT, {"text": "\\u0000 written out"}], ids=repr)
def test_anything_else_takes_the_full_check(value) -> None:
    try:
        check_json(value, max_depth=32)
    except JobInputInvalid as expected:
        with pytest.raises(JobInputInvalid) as refused:
            encode_json(value, max_depth=32, max_bytes=65536)
        assert (refused.value.field, refused.value.rule) == (expected.field, expected.rule)
    else:
        assert json.loads(encode_json(value, max_depth=32, max_bytes=65536)) == value


def test_a_flat_object_over_the_size_limit_is_refused_as_before() -> None:
    with pytest.raises(JobInputInvalid) as refused:
        encode_json({"a": "x" * 100}, max_depth=32, max_bytes=50)
    assert refused.value.rule == "max-bytes"


def test_a_depth_limit_of_zero_refuses_even_a_flat_object() -> None:
    assert _flat_text({}, max_depth=0) is None
    with pytest.raises(JobInputInvalid):
        encode_json({}, max_depth=0, max_bytes=100)


def test_only_flat_objects_of_plain_values_take_the_one_pass() -> None:
    for value in NOT_FLAT[:6]:
        assert _flat_text(value, max_depth=32) is None, value


def test_a_literal_over_the_size_limit_is_refused_as_before() -> None:
    with pytest.raises(JobInputInvalid) as refused:
        encode_json(None, max_depth=32, max_bytes=3)
    assert refused.value.rule == "max-bytes"


@pytest.mark.parametrize("value", [0, 1, 2**63, 1.5, "text", [None, True]], ids=repr)
def test_other_values_take_the_full_check(value) -> None:
    assert _flat_text(value, max_depth=32) is None
