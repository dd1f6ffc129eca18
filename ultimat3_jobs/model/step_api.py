"""``ctx.step``: durable steps as a job's body calls them.

Layer L3 (job model). A sync body gets :class:`Steps`; an ``async def`` body gets
:class:`AsyncSteps`, the same methods to ``await``
(``await ctx.step.run("charge", charge)``), whose functions may be sync or ``async def``. Both
drive the plans of :mod:`ultimat3_jobs.model.steps`. A body called directly (outside a worker, with
:meth:`JobContext.for_direct_call <ultimat3_jobs.model.context.JobContext.for_direct_call>`)
stores nothing: a step runs its function and answers the JSON form of its result; a sleep or a
wait answers ``None`` at once.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from ultimat3_jobs.errors import StepInvalid
from ultimat3_jobs.model.step_rules import (
    aware,
    check_callable,
    check_event,
    check_step_name,
    seconds_of,
    step_json,
)
from ultimat3_jobs.model.steps import (
    OWN_JSON_FORM,
    Call,
    InlineWriter,
    Plan,
    StepState,
    StepWriter,
    Wait,
    Write,
)

Duration = float | int | timedelta


def _over_timeout(op: Call, started: float) -> None:
    elapsed = time.monotonic() - started
    if op.timeout is not None and elapsed > op.timeout:
        raise TimeoutError(
            f"step {op.step!r} ran {elapsed:.3g} s, over its timeout of {op.timeout:g} s; "
            "its result was not stored"
        )


def _drive_sync(plan: Plan, writer: StepWriter) -> Any:
    """Drive ``plan`` on this thread: its functions called here, its store writes through
    ``writer``."""
    answer: Any = None
    send, call = plan.send, writer.call
    try:
        while True:
            op = send(answer)
            if type(op) is Write:
                answer = call(op.method, op.kwargs)
                continue
            timed = op.timeout is not None
            started = time.monotonic() if timed else 0.0
            answer = op.fn(*op.args)
            if type(answer) not in OWN_JSON_FORM and inspect.isawaitable(answer):
                getattr(answer, "close", lambda: None)()
                raise TypeError(
                    f"step {op.step!r}: its function returned an awaitable in a sync "
                    "body; use a plain function (or declare the body async def)"
                )
            if timed:
                _over_timeout(op, started)
    except StopIteration as stop:
        return stop.value


def _drive_joined(plan: Plan, database: str) -> Any:
    """Drive an ``atomic=True`` step's plan inside ``transaction.atomic(using=database)`` on
    this thread, its reads and its record written on this thread's connection: the step's
    writes on ``database`` and its record commit together (a record refused by the fence rolls
    them back)."""
    with transaction.atomic(using=database):
        return _drive_sync(plan, InlineWriter())


@dataclass(frozen=True, slots=True)
class _RunCall:
    """What one ``run`` was called with, as :meth:`_StepsBase.run` hands it to its API."""

    name: str
    fn: Callable[[], Any]
    compensate: Callable[[Any], Any] | None
    timeout: Duration | None
    atomic: bool


class _StepsBase[Answer]:
    """What both APIs share: ``run``, declared once (each API runs it its own way, answering
    ``Answer``: the result, or an awaitable of it), and the argument checks made before a plan
    runs (nothing is written when one refuses)."""

    def __init__(self, state: StepState | None = None) -> None:
        self._state = state
        self._used: set[str] = set()

    @property
    def compensations(self) -> int:
        """How many done steps this run reached have a compensation to run on unwind."""
        return 0 if self._state is None else len(self._state.reached)

    def run(
        self,
        name: str,
        fn: Callable[[], Any],
        *,
        compensate: Callable[[Any], Any] | None = None,
        timeout: Duration | None = None,
        atomic: bool = False,
    ) -> Answer:
        """Run ``fn()`` once per job: store its result (JSON) and answer the stored form; on a
        replay answer the stored result without calling ``fn``. ``compensate(result)`` runs if
        the job later fails for good. Over ``timeout`` seconds the step fails and stores
        nothing.

        ``atomic=True``: ``fn`` runs inside ``transaction.atomic()`` on the job database and
        the step's record is written in that same transaction, so what ``fn`` writes there and
        the record commit together or not at all: those writes happen once per job, never
        again on a replay. With a store outside the Django database (Redis, memory) the record
        is written after ``fn``, as for any step.

        In an ``async def`` body (awaited): ``fn`` (and ``compensate``) may be ``async def``;
        over ``timeout`` the step's coroutine is cancelled. ``atomic=True`` is refused there
        (``X_STEP_INVALID``): a step's writes and its record share one transaction only on one
        thread's connection, which an ``async def`` body does not hold; declare the body as a
        plain function for it."""
        return self._run(_RunCall(name, fn, compensate, timeout, atomic))

    def _run(self, call: _RunCall) -> Answer:
        """Run ``call`` this API's way: on the body's thread, or awaited on its event loop."""
        raise NotImplementedError

    def _joined(self, name: str, atomic: object) -> str | None:
        """The database whose transaction an ``atomic=True`` step runs in, or ``None`` (not
        atomic, a direct call, or a store outside the Django database)."""
        if atomic is False:
            return None
        if not isinstance(atomic, bool):
            raise StepInvalid(
                f"step {name!r}: atomic must be True or False; got {type(atomic).__name__}",
                field=str(name),
                rule="atomic-bool",
            )
        if not atomic or self._state is None:
            return None
        return self._state.driver.transaction_database

    def _direct(self, name: object) -> None:
        check_step_name(name, self._used)
        self._used.add(str(name))

    def _run_plan(self, call: _RunCall, record: Callable[..., Any] | None = None) -> Plan | None:
        """The plan of a ``run`` step; ``None`` for a direct call (``fn`` checked, the name
        taken: the caller calls ``fn`` itself)."""
        name, fn, timeout = call.name, call.fn, call.timeout
        limit = None if timeout is None else seconds_of(str(name), "timeout", timeout)
        if self._state is None:
            check_callable(str(name), "fn", fn)
            self._direct(name)
            return None
        return self._state.plan_run(name, fn, compensate=call.compensate, timeout=limit, put=record)

    def _wait_plan(self, name: str, wait: Wait) -> Plan | None:
        """The plan of a sleep or a wait; ``None`` for a direct call (which answers ``None``)."""
        if self._state is None:
            self._direct(name)
            return None
        return self._state.plan_wait(name, wait)

    def _sleep_plan(self, name: str, duration: Duration) -> Plan | None:
        seconds = seconds_of(str(name), "duration", duration)
        return self._wait_plan(name, Wait("sleep", seconds=seconds))

    def _sleep_until_plan(self, name: str, when: datetime) -> Plan | None:
        return self._wait_plan(name, Wait("sleep", until=aware(str(name), when)))

    def _event_plan(self, name: str, event: object, key: object, timeout: object) -> Plan | None:
        checked_event, checked_key = check_event(event, key)
        seconds = seconds_of(str(name), "timeout", timeout)
        return self._wait_plan(name, Wait("event", checked_event, checked_key, seconds))


class Steps(_StepsBase[Any]):
    """``ctx.step`` in a sync body."""

    def run_recorded(self, name: str, fn: Callable[[], Any], *, record: Callable[..., Any]) -> Any:
        """:meth:`run` with ``atomic=True`` whose record is written by ``record``, a store
        method taking ``step_put``'s arguments and answering whether it landed, instead of
        ``step_put``: for a factory whose own bookkeeping lands in the same statement as the
        step's record (a backfill's ledger count). A direct call stores nothing, as
        :meth:`run`."""
        return self._run(_RunCall(name, fn, compensate=None, timeout=None, atomic=True), record)

    def _run(self, call: _RunCall, record: Callable[..., Any] | None = None) -> Any:
        plan = self._run_plan(call, record)
        joined = self._joined(call.name, call.atomic)
        if plan is None:
            return json.loads(step_json(call.name, call.fn()))
        if joined is not None:
            return _drive_joined(plan, joined)
        return self._drive(plan)

    def once(self, name: str, fn: Callable[[], Any]) -> Any:
        """Like :meth:`run`, for a function that must never run twice: ``started`` is stored
        before ``fn`` runs, and a replay that finds it never done fails the job
        (``X_STEP_ONCE_INTERRUPTED``) instead of running ``fn`` again."""
        if self._state is None:
            return self.run(name, fn)
        return self._drive(self._state.plan_run(name, fn, kind="once"))

    def sleep(self, name: str, duration: Duration) -> None:
        """Suspend the job for ``duration`` (seconds or a timedelta) without holding a worker
        slot; the job resumes by replaying its steps."""
        plan = self._sleep_plan(name, duration)
        return None if plan is None else self._drive(plan)

    def sleep_until(self, name: str, when: datetime) -> None:
        """Suspend the job until the aware datetime ``when``."""
        plan = self._sleep_until_plan(name, when)
        return None if plan is None else self._drive(plan)

    def wait_for_event(
        self, name: str, event: str, *, key: str | None = None, timeout: Duration
    ) -> Any:
        """Suspend the job until ``send_event(event, key=key)`` is called after the wait
        began, and answer its payload; ``None`` once ``timeout`` passes (database time)."""
        plan = self._event_plan(name, event, key, timeout)
        return None if plan is None else self._drive(plan)

    def unwind(self) -> None:
        """Run the compensations of the done steps this run reached, newest first."""
        if self._state is not None and self._state.reached:
            self._drive(self._state.plan_unwind())

    def _drive(self, plan: Plan) -> Any:
        assert self._state is not None
        return _drive_sync(plan, self._state.writer)


class AsyncSteps(_StepsBase[Awaitable[Any]]):
    """``ctx.step`` in an ``async def`` body: the same methods, awaited."""

    async def _run(self, call: _RunCall) -> Any:
        name = call.name
        if call.atomic is not False:
            self._joined(name, call.atomic)
            raise StepInvalid(
                f"step {name!r}: atomic=True needs a sync body (a plain def): an async body's "
                "step writes run on other connections than its own, so its writes and the "
                "step's record cannot share one transaction",
                field=str(name),
                rule="atomic-sync-body",
            )
        plan = self._run_plan(call)
        if plan is None:
            value = call.fn()
            if inspect.isawaitable(value):
                value = await value
            return json.loads(step_json(name, value))
        return await self._drive(plan)

    async def once(self, name: str, fn: Callable[[], Any]) -> Any:
        """:meth:`Steps.once`."""
        if self._state is None:
            return await self.run(name, fn)
        return await self._drive(self._state.plan_run(name, fn, kind="once"))

    async def sleep(self, name: str, duration: Duration) -> None:
        """:meth:`Steps.sleep`."""
        plan = self._sleep_plan(name, duration)
        return None if plan is None else await self._drive(plan)

    async def sleep_until(self, name: str, when: datetime) -> None:
        """:meth:`Steps.sleep_until`."""
        plan = self._sleep_until_plan(name, when)
        return None if plan is None else await self._drive(plan)

    async def wait_for_event(
        self, name: str, event: str, *, key: str | None = None, timeout: Duration
    ) -> Any:
        """:meth:`Steps.wait_for_event`."""
        plan = self._event_plan(name, event, key, timeout)
        return None if plan is None else await self._drive(plan)

    async def unwind(self) -> None:
        """:meth:`Steps.unwind`."""
        if self._state is not None and self._state.reached:
            await self._drive(self._state.plan_unwind())

    async def _drive(self, plan: Plan) -> Any:
        assert self._state is not None
        writer = self._state.writer
        answer: Any = None
        try:
            while True:
                op = plan.send(answer)
                if isinstance(op, Write):
                    answer = await writer.acall(op.method, op.kwargs)
                    continue
                value = op.fn(*op.args)
                if inspect.isawaitable(value):
                    value = await asyncio.wait_for(value, op.timeout)
                answer = value
        except StopIteration as stop:
            return stop.value
