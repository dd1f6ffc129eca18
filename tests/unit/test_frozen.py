"""``quick_init``: the frozen records built per job keep their dataclass's contract."""

from __future__ import annotations

import dataclasses
import inspect
import uuid

import pytest

from ultimat3_jobs.frozen import quick_init, quick_new
from ultimat3_jobs.runtime.worker.attempt import Outcome
from ultimat3_jobs.types import ClaimedJob, SettleItem


def test_the_quick_init_takes_what_the_dataclass_init_takes() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Record:
        a: int
        b: str = "b"
        c: int | None = dataclasses.field(default=None, kw_only=True)

    generated = inspect.signature(Record.__init__)
    quick_init(Record)
    assert [
        (p.name, p.kind, p.default) for p in inspect.signature(Record.__init__).parameters.values()
    ] == [(p.name, p.kind, p.default) for p in generated.parameters.values()]
    record = Record(1, c=3)
    assert (record.a, record.b, record.c) == (1, "b", 3)
    assert record == Record(1, "b", c=3) and hash(record) == hash(Record(1, "b", c=3))
    assert dataclasses.replace(record, b="x") == Record(1, "x", c=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Record()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Record(1, 2, 3)  # type: ignore[misc]


def test_the_per_job_records_have_it_with_their_own_defaults() -> None:
    job_id, token = uuid.uuid4(), uuid.uuid4()
    item = SettleItem(job_id=job_id, claim_token=token, action="complete")
    assert (item.result_json, item.progress_json, item.error, item.lent_by) == (
        "null",
        None,
        None,
        None,
    )
    assert item.counts_as_attempt and not item.relayed
    for cls in (ClaimedJob, SettleItem, Outcome):
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
        assert cls.__init__.__code__.co_filename == f"<quick_init {cls.__qualname__}>"


@pytest.mark.parametrize(
    "declare",
    [
        lambda: dataclasses.dataclass(frozen=True)(
            type("NoSlots", (), {"__annotations__": {"a": int}})
        ),
        lambda: dataclasses.dataclass(slots=True)(
            type("NotFrozen", (), {"__annotations__": {"a": int}})
        ),
    ],
)
def test_it_refuses_a_class_it_cannot_mirror(declare) -> None:
    with pytest.raises(TypeError):
        quick_init(declare())


def test_it_refuses_a_default_factory_and_a_post_init() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (Factory, PostInit):
        with pytest.raises(TypeError):
            quick_init(cls)


def test_quick_new_builds_the_record_the_class_builds() -> None:
    """The per-job builder takes the class's arguments and defaults and gives the same frozen
    record: equal, hashed alike, of the class itself, still frozen."""

    @dataclasses.dataclass(frozen=True, slots=True, weakref_slot=True)
    class Record:
        a: int
        b: str = "b"
        c: int | None = dataclasses.field(default=None, kw_only=True)

    quick_init(Record)
    new = quick_new(Record)
    record = new(1, c=3)
    assert type(record) is Record and record == Record(1, c=3)
    assert hash(record) == hash(Record(1, "b", c=3)) and repr(record) == repr(Record(1, c=3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        new()
    with pytest.raises(TypeError):
        new(1, 2, 3)
    job_id, token = uuid.uuid4(), uuid.uuid4()
    item = quick_new(SettleItem)(job_id=job_id, claim_token=token, action="complete")
    assert item == SettleItem(job_id=job_id, claim_token=token, action="complete")


def test_quick_init_refuses_a_record_that_derives_from_another() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Base:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived(Base):
        b: int

    with pytest.raises(TypeError):
        quick_init(Derived)
