"""``carry``: one record built from another passes the fields they name alike, once."""

from __future__ import annotations

import dataclasses

import pytest

from ultimat3_jobs.admin.driver_jobs import worker_rows
from ultimat3_jobs.carry import carried, carry
from ultimat3_jobs.drivers.memory import MemoryDriver


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


def test_an_admin_worker_row_carries_every_column_the_driver_answers() -> None:
    driver = MemoryDriver()
    driver.worker_heartbeat(
        worker_id="w",
        host="h",
        pid=1,
        queues=["q"],
        slots=2,
        ttl_seconds=60,
        limits={"shed": {"job": 3}},
    )
    (record,) = driver.worker_list()
    (row,) = worker_rows(driver).load()
    assert row.limits == record.limits == {"shed": {"job": 3}}
    assert (row.id, row.host, row.pid, row.queues, row.slots) == ("w", "h", 1, ["q"], 2)
    assert (row.demand, row.started_at, row.expires_at) == (
        record.demand,
        record.started_at,
        record.expires_at,
    )
