"""Durable steps, the part sync and async bodies share: replay by name, fenced writes,
suspension and the unwind.

Layer L3 (job model). Each step is a *plan*: a generator that yields what it needs done, a
:class:`Call` of the step's own function or a :class:`Write` to the store, and gets the answer
back. :class:`~ultimat3_jobs.model.step_api.Steps` drives a plan on the body's thread,
:class:`~ultimat3_jobs.model.step_api.AsyncSteps` on the body's event loop, so both keep the same
rules from one text:

* a step's result is stored (one write) before the step returns, and it returns the JSON form of
  what was stored; a replayed step answers its stored output, with no write and no call;
* the steps of an attempt are read once, the first time the body reaches a step;
* every write is fenced by the attempt's claim token: a write that does not land raises
  :class:`~ultimat3_jobs.errors.JobLeaseLost`; a cancelled attempt writes nothing more
  (:class:`~ultimat3_jobs.errors.JobAborted`);
* a sleep or a pending wait suspends the job (``job_suspend``) and raises
  :class:`StepSuspended`, which ends the attempt without an error.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Generator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.drivers.steps_seam import StepRecord, wait_key
from ultimat3_jobs.errors import JobAborted, JobLeaseLost, StepMismatch, StepOnceInterrupted
from ultimat3_jobs.model.step_rules import check_callable, check_step_name, step_json
from ultimat3_jobs.types import StepKind

OWN_JSON_FORM = frozenset({type(None), bool, int, str})
"""The types whose values, once checked and stored, are their own JSON form (a step answers
them without decoding what it stored, and a driver of plans knows them for no awaitable)."""


class StepSuspended(BaseException):
    """Raised by a step that sleeps or waits once its job is suspended: the attempt is over and
    the body stops. A ``BaseException``, so that a body's ``except Exception`` lets it through."""

    def __init__(self, step: str, wake_at: datetime | None) -> None:
        self.step = step
        self.wake_at = wake_at
        super().__init__(f"suspended at step {step!r} until {wake_at}")


@dataclass(slots=True)
class Call:
    """Call the step's own function (or a compensation) with ``args``."""

    step: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    timeout: float | None = None


@dataclass(slots=True)
class Write:
    """One call of a store method with keyword arguments."""

    method: Callable[..., Any]
    kwargs: dict[str, Any]


Op = Call | Write
Plan = Generator[Op, Any, Any]


class StepWriter(Protocol):
    """Where a step's store calls run: never inside the body's open transaction."""

    def call(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any: ...

    async def acall(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any: ...


class InlineWriter:
    """Store calls on the calling thread (the memory driver, the test runner)."""

    def call(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        return method(**kwargs)

    async def acall(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        return method(**kwargs)


@dataclass(frozen=True, slots=True)
class Wait:
    """What a sleep (``kind="sleep"``, for ``seconds`` or ``until``) or a wait for ``event`` and
    ``key`` (``kind="event"``, at most ``seconds``) waits for: the arguments of the store's
    ``step_wait`` past the step's name and place."""

    kind: StepKind
    event: str | None = None
    key: str | None = None
    seconds: float | None = None
    until: datetime | None = None


@dataclass(slots=True)
class Reached:
    """A done step this run reached that has a compensation."""

    seq: int
    name: str
    kind: StepKind
    compensate: Callable[..., Any]
    output: Any


@dataclass(slots=True, kw_only=True)
class StepState:
    """The steps of one attempt: the stored records (read once, at the first step; the waits
    and compensations this run writes update them), the names used in this run, and the
    compensations of the done steps it reached."""

    driver: JobDriver
    job_id: uuid.UUID
    claim_token: uuid.UUID
    job_name: str
    writer: StepWriter
    cancelled: threading.Event
    records: dict[str, StepRecord] | None = None
    used: set[str] = field(default_factory=set)
    last_seq: int = 0
    reached: list[Reached] = field(default_factory=list)

    # -- the shared moves ---------------------------------------------------------------------

    def _load(self) -> Plan:
        if self.records is None:
            rows = yield Write(self.driver.step_get_many, {"job_id": self.job_id})
            self.records = {row.name: row for row in rows}
            self.last_seq = max((row.seq for row in rows), default=0)
        return self.records

    def _write(self, name: str, method: Callable[..., Any], /, **kwargs: Any) -> Plan:
        if self.cancelled.is_set():
            raise JobAborted(
                f"job {self.job_name} {self.job_id}: its attempt was cancelled; step {name!r} "
                "was not written"
            )
        answer = yield Write(
            method, {"job_id": self.job_id, "claim_token": self.claim_token, **kwargs}
        )
        if answer is None or answer is False:
            raise JobLeaseLost(
                f"job {self.job_name} {self.job_id}: step {name!r} was not written, this "
                "attempt no longer holds the job (rescued, cancelled or settled elsewhere)",
                field=name,
                rule="fenced",
            )
        return answer

    def _next_seq(self) -> int:
        self.last_seq += 1
        return self.last_seq

    def _begin(self, name: object) -> Plan:
        """Check the name (nothing is read for a refused step), then the stored record."""
        checked = check_step_name(name, self.used)
        records = self.records
        if records is None:
            records = yield from self._load()
        self.used.add(checked)
        return records.get(checked)

    @staticmethod
    def _expect(
        record: StepRecord, kind: StepKind, event: str | None = None, key: str | None = None
    ) -> None:
        stored = (record.kind, record.event, record.key)
        wanted = (kind, event, wait_key(event, key))
        if stored != wanted:
            raise StepMismatch(
                f"step {record.name!r} is stored as {_describe(*stored)} but the body now asks "
                f"for {_describe(*wanted)}: a running job's steps keep their names and kinds "
                "(give a changed step a new name)",
                field=record.name,
                rule="step-match",
            )

    # -- the plans ----------------------------------------------------------------------------

    def plan_run(
        self,
        name: str,
        fn: Callable[[], Any],
        *,
        kind: StepKind = "run",
        compensate: Callable[..., Any] | None = None,
        timeout: float | None = None,
        put: Callable[..., Any] | None = None,
    ) -> Plan:
        """``put``: the store method that writes the step done, in place of ``step_put``
        (called with the same arguments)."""
        check_callable(str(name), "fn", fn)
        check_callable(str(name), "compensate", compensate)
        record = yield from self._begin(name)
        if record is not None:
            self._expect(record, kind)
            if record.status == "started":
                raise StepOnceInterrupted(
                    f"job {self.job_name} {self.job_id}: once step {name!r} was started and "
                    "never recorded done; it is not run a second time",
                    field=name,
                    rule="once",
                )
            seq, output = record.seq, record.output
        else:
            seq = self._next_seq()
            if kind == "once":
                yield from self._write(name, self.driver.step_start_once, name=name, seq=seq)
            value = yield Call(name, fn, (), timeout)
            text = step_json(name, value)
            yield from self._write(
                name,
                put or self.driver.step_put,
                name=name,
                seq=seq,
                kind=kind,
                status="done",
                output_json=text,
            )
            output = value if type(value) in OWN_JSON_FORM else json.loads(text)
        if compensate is not None:
            self.reached.append(Reached(seq, name, kind, compensate, output))
        return output

    def plan_wait(self, name: str, wait: Wait) -> Plan:
        record = yield from self._begin(name)
        if record is None:
            record = yield from self._write(
                name, self.driver.step_wait, name=name, seq=self._next_seq(), **asdict(wait)
            )
        else:
            self._expect(record, wait.kind, wait.event, wait.key)
            if record.status == "waiting":
                record = yield from self._write(name, self.driver.step_wait_resolve, name=name)
        assert self.records is not None
        self.records[name] = record
        if record.status != "waiting":
            return record.output
        yield from self._write(name, self.driver.job_suspend, step=name)
        raise StepSuspended(name, record.wait_until)

    def plan_unwind(self) -> Plan:
        """Run the compensations of the done steps this run reached, newest first, each
        recorded ``compensated`` so that none runs twice."""
        assert self.records is not None
        for reached in sorted(self.reached, key=lambda r: r.seq, reverse=True):
            record = self.records.get(reached.name)
            if record is not None and record.status == "compensated":
                continue
            yield Call(reached.name, reached.compensate, (reached.output,))
            yield from self._write(
                reached.name,
                self.driver.step_put,
                name=reached.name,
                seq=reached.seq,
                kind=reached.kind,
                status="compensated",
            )
            self.records[reached.name] = (
                StepRecord(
                    name=reached.name,
                    seq=reached.seq,
                    kind=reached.kind,
                    status="compensated",
                    output=reached.output,
                )
                if record is None
                else replace(record, status="compensated")
            )


def _describe(kind: str, event: str | None, key: str | None) -> str:
    if kind != "event":
        return f"a {kind} step"
    return f"a wait for event {event!r}" + (f" with key {key!r}" if key else " without a key")
