"""``carry``: one record built from another passes the fields they name alike, once."""

from __future__ import annotations

import dataclasses

import pytest

from ultimat3_jobs.carry import carried, carry


@dataclasses.dataclass(frozen=True)
class Source:
    a: int
    b: str
    only_here: float = 0.5


@dataclasses.dataclass(frozen=True, kw_only=True)
class Target:
    a: int
    b: str
    extra: str
    derived: int = dataclasses.field(init=False, default=0)


def test_a_dataclass_target_takes_the_fields_it_declares_with_the_given_ones_over_them() -> None:
    source = Source(1, "b")
    assert carried(source, Target) == {"a": 1, "b": "b"}
    assert carry(Target, source, extra="x") == Target(a=1, b="b", extra="x")
    assert carry(Target, source, extra="x", b="over") == Target(a=1, b="over", extra="x")


def test_another_class_takes_the_fields_it_has_as_class_attributes() -> None:
    class Model:
        a = None
        only_here = None

        def __init__(self, **values: object) -> None:
            self.values = values

    assert carry(Model, Source(1, "b")).values == {"a": 1, "only_here": 0.5}


def test_a_source_that_is_no_dataclass_is_refused() -> None:
    with pytest.raises(TypeError, match="not a dataclass"):
        carried(object(), Target)
