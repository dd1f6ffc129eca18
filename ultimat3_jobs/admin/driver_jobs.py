"""What the admin's pages read from a store the ORM cannot read: jobs, workers, pauses and crons
as unsaved model instances built from the driver's operator reads (see
:mod:`~ultimat3_jobs.admin.driver_rows` for when and why).

Layer: surface. Reads through ``job_list`` and ``job_get`` (jobs), ``worker_list``,
``pause_list`` and ``scheduler_cron_read``; writes nothing.

Cost of a job changelist page: page ``p`` of ``n`` rows reads ``p * n + 1`` jobs through
``job_list`` (its cursor walks from the newest job), in pages of at most
:data:`~ultimat3_jobs.drivers.base.JOB_PAGE_MAX`; a selection of ids reads one ``job_get``
each.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ultimat3_jobs.admin.driver_rows import DriverRows, ListedRows, matches
from ultimat3_jobs.carry import carry
from ultimat3_jobs.drivers.base import JOB_PAGE_MAX, JobDriver
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import Job, JobPause, JobWorker, SchedulerTask
from ultimat3_jobs.types import CRON_SCOPE, JobRecord, JobState, JobSummary

_STATES = frozenset(state.value for state in JobState)

LIST_FILTERS = {"state": "states", "queue": "queues", "name": "names"}
"""Lookups ``job_list`` takes as a list of exact values."""


def _job(
    source: JobSummary | JobRecord,
    *,
    error_count: int,
    last_error_class: str | None,
    last_error_message: str | None,
) -> Job:
    """A :class:`Job` with every column ``source`` carries (its state as the column's text)."""
    job = carry(Job, source, state=source.state.value)
    job.error_count = error_count  # type: ignore[attr-defined]
    job.last_error_class = last_error_class  # type: ignore[attr-defined]
    job.last_error_message = last_error_message  # type: ignore[attr-defined]
    return job


def job_from_summary(summary: JobSummary) -> Job:
    """A changelist row: the summary's columns, and its last error as the ORM's annotations."""
    return _job(
        summary,
        error_count=summary.error_count,
        last_error_class=summary.last_error_class,
        last_error_message=summary.last_error_message,
    )


def job_from_record(record: JobRecord) -> Job:
    """A job in full (its page, a selected row)."""
    last = record.errors[-1] if record.errors else {}
    return _job(
        record,
        error_count=len(record.errors),
        last_error_class=last.get("error_class"),
        last_error_message=last.get("message"),
    )


def _one_of(lookups: Mapping[str, Any], field: str) -> list[str] | None:
    """The values ``field`` may take under ``lookups`` (``None``: any)."""
    allowed: list[str] | None = None
    if field in lookups:
        allowed = [str(lookups[field])]
    if f"{field}__in" in lookups:
        values = [str(value) for value in lookups[f"{field}__in"]]
        allowed = values if allowed is None else [v for v in allowed if v in values]
    return allowed


class JobRows(DriverRows):
    """Jobs newest first, through ``job_list`` (filters by state, queue, name, tenant and
    idempotency key) or, for a selection of ids, ``job_get``."""

    def __init__(self, driver: JobDriver, lookups: Mapping[str, Any] | None = None) -> None:
        super().__init__(Job, lookups)
        self.driver = driver

    def _ids(self) -> list[uuid.UUID] | None:
        allowed = _one_of(self.lookups, "id")
        if allowed is None:
            return None
        ids = []
        for value in dict.fromkeys(allowed):
            try:
                ids.append(uuid.UUID(value))
            except ValueError:
                continue  # not a job id: no job has it
        return ids

    def read(self, stop: int | None) -> list[Job]:
        ids = self._ids()
        if ids is not None:
            records = [self.driver.job_get(job_id=job_id) for job_id in ids]
            rows = [job_from_record(r) for r in records if r is not None]
            rows = [row for row in rows if matches(row, self.lookups)]
            rows.sort(key=lambda row: (row.created_at, row.id), reverse=True)
            return rows[:stop]
        arguments: dict[str, Any] = {}
        for field, argument in LIST_FILTERS.items():
            allowed = _one_of(self.lookups, field)
            if allowed is not None:
                if field == "state":
                    allowed = [value for value in allowed if value in _STATES]
                if not allowed:
                    return []
                arguments[argument] = allowed
        if "tenant_id" in self.lookups:
            arguments["tenant"] = self.lookups["tenant_id"]
        if "idempotency_key" in self.lookups:
            arguments["search"] = self.lookups["idempotency_key"]
        found: list[Job] = []
        after = None
        while stop is None or len(found) < stop:
            want = JOB_PAGE_MAX if stop is None else min(JOB_PAGE_MAX, stop - len(found))
            page = self.driver.job_list(**arguments, after=after, limit=want)
            found += [row for row in map(job_from_summary, page.jobs) if matches(row, self.lookups)]
            if page.next_cursor is None:
                break
            after = page.next_cursor
        return found[:stop]


def job_rows(driver: JobDriver) -> JobRows:
    return JobRows(driver)


def worker_rows(driver: JobDriver) -> ListedRows:
    """Live workers, by id."""

    def load() -> list[JobWorker]:
        return [
            carry(JobWorker, worker, queues=list(worker.queues), demand=dict(worker.demand))
            for worker in driver.worker_list()
        ]

    return ListedRows(JobWorker, load)


def pause_rows(driver: JobDriver) -> ListedRows:
    """Every pause, by scope then target. A row's ``pk`` is ``scope:target`` (what the
    selection checkbox carries), since the store numbers no pause."""

    def load() -> list[JobPause]:
        rows = []
        for pause in sorted(driver.pause_list(), key=lambda p: (p.scope, p.target)):
            row = carry(JobPause, pause)
            row.pk = f"{pause.scope}:{pause.target}"
            rows.append(row)
        return rows

    return ListedRows(JobPause, load)


def cron_rows(driver: JobDriver, names: Sequence[str] | None = None) -> ListedRows:
    """The declared cron jobs the store holds a state for, by name, each with ``is_paused``."""

    def load() -> list[SchedulerTask]:
        wanted = sorted(c.name for c in registry.crons()) if names is None else list(names)
        states = driver.scheduler_cron_read(names=wanted)
        paused = {pause.target for pause in driver.pause_list() if pause.scope == CRON_SCOPE}
        rows = []
        for name in sorted(states):
            row = carry(SchedulerTask, states[name], name=name)
            row.is_paused = name in paused  # type: ignore[attr-defined]
            rows.append(row)
        return rows

    return ListedRows(SchedulerTask, load)
