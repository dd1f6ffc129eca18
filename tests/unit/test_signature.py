"""The compiled signature check answers as ``inspect.Signature.bind`` does, for every shape."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from ultimat3_jobs.errors import JobInputInvalid
from ultimat3_jobs.model.signature import check_signature, input_check, shape_of


def only_ctx(ctx): ...
def keywords(ctx, *, a, b=1): ...
def positional_or_keyword(ctx, a, b=2): ...
def any_keyword(ctx, **input): ...
def some_and_any(ctx, a, *args, c=3, **rest): ...
def ctx_positional_only(ctx, /, **input): ...
def positional_only_after(ctx, a, /, b=1): ...
def ctx_keyword_only(*, ctx): ...


BODIES = [
    only_ctx,
    keywords,
    positional_or_keyword,
    any_keyword,
    some_and_any,
    ctx_positional_only,
    positional_only_after,
    ctx_keyword_only,
]
INPUTS: list[dict[Any, Any]] = [
    {},
    {"a": 1},
    {"b": 1},
    {"a": 1, "b": 2},
    {"a": 1, "c": 2},
    {"a": 1, "zz": 2},
    {"ctx": 1},
    {"a": 1, "ctx": 1},
    {"args": 1, "a": 1},
    {"rest": 1, "a": 1},
    {1: 2},
]


def binds(signature: inspect.Signature, input: dict[Any, Any]) -> bool:
    try:
        signature.bind(None, **input)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("body", BODIES, ids=lambda body: body.__name__)
@pytest.mark.parametrize("input", INPUTS, ids=repr)
def test_the_compiled_check_agrees_with_bind(body, input) -> None:
    signature = inspect.signature(body)
    shape = shape_of(signature)
    if shape is not None:
        assert shape.admits(input) == binds(signature, input)
    batch_check = input_check(signature, where="body")
    for check in (
        lambda: check_signature(signature, input, where="body"),
        lambda: batch_check(input),
    ):
        if binds(signature, input):
            check()
        else:
            with pytest.raises(JobInputInvalid) as refused:
                check()
            assert refused.value.rule == "signature"
            assert refused.value.message.startswith(f"input does not match body{signature}: ")


def test_a_job_without_a_signature_admits_any_input() -> None:
    input_check(None, where="body")({"anything": 1, 2: 3})


def test_unusual_shapes_are_left_to_bind() -> None:
    assert shape_of(inspect.signature(positional_only_after)) is None
    assert shape_of(inspect.signature(ctx_keyword_only)) is None
    assert shape_of(inspect.signature(keywords)) is not None
