"""The W3C traceparent rules, with no database: what is stored, what is refused, what is
dropped."""

from __future__ import annotations

import pytest

from ultimat3_jobs.errors import JobOptionInvalid
from ultimat3_jobs.model.tracing import check_traceparent, explicit_traceparent

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
VALID = f"00-{TRACE}-{SPAN}-01"


@pytest.mark.parametrize("value", [VALID, f"00-{TRACE}-{SPAN}-00", f"00-{TRACE}-{SPAN}-ff"])
def test_a_valid_header_is_kept_as_it_is(value):
    assert check_traceparent(value) == value


def test_an_all_zero_span_id_stores_none():
    assert check_traceparent(f"00-{TRACE}-{'0' * 16}-01") is None


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (VALID.upper(), "lower case"),
        (f"01-{TRACE}-{SPAN}-01", "00-<32 hex"),
        (f"ff-{TRACE}-{SPAN}-01", "00-<32 hex"),
        (f"00-{TRACE[:-1]}-{SPAN}-01", "00-<32 hex"),
        (f"00-{TRACE}-{SPAN}-01-extra", "00-<32 hex"),
        (f"00-{TRACE}-{SPAN}-1", "00-<32 hex"),
        (f"00-{'g' * 32}-{SPAN}-01", "00-<32 hex"),
        (f" {VALID}", "00-<32 hex"),
        (f"00-{'0' * 32}-{SPAN}-01", "trace id is not all zeros"),
        ("", "00-<32 hex"),
        (42, "is text"),
        (b"00", "is text"),
    ],
)
def test_anything_else_is_refused_naming_the_rule(value, rule):
    with pytest.raises(ValueError, match=rule):
        check_traceparent(value)
    with pytest.raises(JobOptionInvalid) as caught:
        explicit_traceparent(value)
    assert caught.value.code == "X_JOB_OPTION_INVALID"
    assert (caught.value.field, caught.value.rule) == ("traceparent", "w3c-traceparent")
