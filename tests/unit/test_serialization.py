"""JSON-only input: what passes, and the refusal (field and rule) for everything else."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ultimat3_jobs.errors import JobInputInvalid
from ultimat3_jobs.serialization import check_json, decode_json, encode_json


def encode(value: Any, *, max_depth: int = 32, max_bytes: int = 256 * 1024) -> str:
    return encode_json(value, max_depth=max_depth, max_bytes=max_bytes)


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"a": None, "b": True, "c": 1, "d": 1.5, "e": "x", "f": [], "g": {}},
        {"nested": [{"x": [1, [2, [3]]]}]},
        {"unicode": "héllo ✓ 日本 🎉"},
        {"big": 2**63 - 1, "small": -(2**63)},
        {"float": 1e308, "neg": -0.0},
    ],
)
def test_json_values_round_trip_unchanged(value: Any) -> None:
    assert decode_json(encode(value)) == value


@pytest.mark.parametrize(
    ("value", "field", "rule"),
    [
        ({"s": {1, 2}}, "input.s", "json-type"),
        ({"b": b"raw"}, "input.b", "json-type"),
        ({"o": object()}, "input.o", "json-type"),
        ({"t": (1, 2)}, "input.t", "json-type"),
        ({"d": Decimal("1.5")}, "input.d", "json-type"),
        ({"u": uuid.uuid4()}, "input.u", "json-type"),
        ({"when": datetime(2026, 1, 1, tzinfo=UTC)}, "input.when", "json-type"),
        ({"x": float("nan")}, "input.x", "finite-number"),
        ({"x": [1.0, float("inf")]}, "input.x[1]", "finite-number"),
        ({"x": float("-inf")}, "input.x", "finite-number"),
        ({"s": "a\x00b"}, "input.s", "no-nul"),
        ({"s": "a\ud800b"}, "input.s", "valid-unicode"),
        ({"n": 2**63}, "input.n", "int-range"),
        ({"n": -(2**63) - 1}, "input.n", "int-range"),
        ({"n": 10**5000}, "input.n", "int-range"),
        ({"m": {1: "a"}}, "input.m", "string-keys"),
        ({"m": {"odd key": {"deep": {None}}}}, 'input.m["odd key"].deep', "json-type"),
    ],
)
def test_refusals_name_the_field_and_the_rule(value: Any, field: str, rule: str) -> None:
    with pytest.raises(JobInputInvalid) as caught:
        encode(value)
    assert caught.value.code == "X_JOB_INPUT_INVALID"
    assert caught.value.field == field
    assert caught.value.rule == rule
    assert field in str(caught.value)


def test_nul_in_a_key_is_refused() -> None:
    with pytest.raises(JobInputInvalid) as caught:
        encode({"a\x00": 1})
    assert caught.value.rule == "no-nul"


def test_deep_nesting_is_refused_without_recursion_error() -> None:
    value: Any = "leaf"
    for _ in range(10_000):
        value = [value]
    with pytest.raises(JobInputInvalid) as caught:
        encode({"deep": value}, max_depth=32)
    assert caught.value.rule == "max-depth"
    assert "INPUT_MAX_DEPTH (32)" in caught.value.message


def test_depth_limit_is_exact() -> None:
    ok: Any = {}
    for _ in range(3):
        ok = {"x": ok}
    check_json(ok, max_depth=4)  # four containers deep: allowed
    with pytest.raises(JobInputInvalid):
        check_json({"x": ok}, max_depth=4)


def test_size_cap_counts_utf8_bytes() -> None:
    text = "é" * 60  # 120 bytes in UTF-8
    encoded = encode({"t": text}, max_bytes=200)
    assert len(encoded.encode()) <= 200
    with pytest.raises(JobInputInvalid) as caught:
        encode({"t": text}, max_bytes=100)
    assert caught.value.rule == "max-bytes"
    assert "INPUT_MAX_BYTES (100)" in caught.value.message


def test_none_is_null_within_the_size_cap() -> None:
    # The body that returns nothing takes a short path; the cap still holds on it.
    assert encode(None) == "null"
    assert encode(None, max_bytes=4) == "null"
    with pytest.raises(JobInputInvalid) as caught:
        encode(None, max_bytes=3)
    assert caught.value.rule == "max-bytes"


def test_pickle_and_jsonpickle_markers_stay_inert_text() -> None:
    value = {"payload": "gASVCgAAAAAAAACMBm9zLnN5c5SFlC4=", "py/object": "os.system"}
    assert json.loads(encode(value)) == value


@pytest.mark.parametrize("number", [1e16, -1e16, 1e300, 1.5e22, 9.99e15, 5e-324, 1e-7])
def test_floats_are_written_so_jsonb_keeps_them_floats(number: float) -> None:
    text = encode({"n": number, "list": [number]})
    assert "e+" not in text
    decoded = decode_json(text)
    assert decoded == {"n": number, "list": [number]}
    assert isinstance(decoded["n"], float)
