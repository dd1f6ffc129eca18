"""What is enqueued: :func:`enqueued_jobs`, :func:`assert_enqueued`, :func:`assert_not_enqueued`.

Read through the configured driver (``job_list`` then ``job_get``), so the answers are the same
on every driver. Inside a test transaction they see the test's own uncommitted jobs, because the
PostgreSQL driver reads on the calling thread's connection.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ultimat3_jobs.carry import carry
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JOB_PAGE_MAX, JobDriver
from ultimat3_jobs.model.definitions import JobHandle
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.operator.redaction import redact, sensitive_fields
from ultimat3_jobs.types import JobState, JobSummary

JobRef = JobHandle | str
"""A job as the helpers take it: the handle ``@job`` answered, or the job's name."""

FILTERS = ("queue", "priority", "tenant", "idempotency_key", "enqueued_by")
"""The keys of ``options=``: row columns a job must match besides its input."""

MESSAGE_JOBS_MAX = 20
"""A failure message lists at most this many jobs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnqueuedJob:
    """One queued job, as a test reads it. ``input`` is the stored JSON form (a tuple given at
    enqueue reads back as a list); ``run_at`` is when it falls due, on the store's clock."""

    id: uuid.UUID
    name: str
    queue: str
    input: Any
    priority: int
    run_at: datetime
    tenant: str | None
    idempotency_key: str | None
    enqueued_by: str | None
    attempt: int
    max_attempts: int
    created_at: datetime

    def describe(self) -> str:
        """One line with the job's sensitive input redacted, as failure messages show it."""
        shown = redact(self.input, sensitive_fields(self.name))
        return (
            f"{self.id} queue={self.queue!r} priority={self.priority} "
            f"run_at={self.run_at.isoformat()} tenant={self.tenant!r} "
            f"attempt={self.attempt}/{self.max_attempts} input={shown!r}"
        )


def job_name(job: JobRef) -> str:
    """The name of ``job`` (a handle or a name); anything else is refused with ``TypeError``."""
    if isinstance(job, JobHandle):
        return job.name
    if isinstance(job, str):
        return job
    raise TypeError(f"a job is a @job handle or a job name; got {type(job).__name__} {job!r}")


def enqueued_jobs(
    job: JobRef | None = None, *, driver: JobDriver | None = None
) -> list[EnqueuedJob]:
    """The queued jobs (due now or later) of ``job``, or of every job name when ``None``,
    oldest first. Running, finished and cancelled jobs are not enqueued."""
    driver = driver or get_driver()
    names = None if job is None else [job_name(job)]
    summaries: list[JobSummary] = []
    cursor = None
    while True:
        page = driver.job_list(states=["queued"], names=names, after=cursor, limit=JOB_PAGE_MAX)
        summaries.extend(page.jobs)
        cursor = page.next_cursor
        if cursor is None:
            break
    found = []
    for summary in reversed(summaries):  # job_list answers newest first
        record = driver.job_get(job_id=summary.id)
        if record is None or record.state is not JobState.QUEUED:
            continue
        found.append(carry(EnqueuedJob, record, tenant=record.tenant_id))
    return found


def _json_form(value: Any) -> Any:
    """``value`` as it reads back from the store (tuples become lists), when it is JSON."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return value


def _check_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of {', '.join(FILTERS)}; got {options!r}")
    unknown = sorted(set(options) - set(FILTERS))
    if unknown:
        raise TypeError(
            f"unknown option(s) {', '.join(unknown)}; options= takes {', '.join(FILTERS)} "
            "(input fields are keyword arguments)"
        )
    return dict(options)


def matches(job: EnqueuedJob, input_subset: Mapping[str, Any], options: Mapping[str, Any]) -> bool:
    """Whether ``job`` has every field of ``input_subset`` (equal in JSON form) and every
    column of ``options``."""
    if not isinstance(job.input, Mapping):
        return not input_subset and _options_match(job, options)
    for key, expected in input_subset.items():
        if key not in job.input or job.input[key] != _json_form(expected):
            return False
    return _options_match(job, options)


def _options_match(job: EnqueuedJob, options: Mapping[str, Any]) -> bool:
    return all(getattr(job, key) == value for key, value in options.items())


def _expectation(name: str, input_subset: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    shown = redact(dict(input_subset), sensitive_fields(name))
    text = f"{name} with input containing {shown!r}" if input_subset else f"{name} (any input)"
    if options:
        text += " and " + ", ".join(f"{key}={value!r}" for key, value in options.items())
    return text


def _listing(name: str, jobs: list[EnqueuedJob]) -> str:
    if not jobs:
        hint = "" if name in registry else f" (and no job is declared under the name {name!r})"
        return f"no job of that name is enqueued{hint}."
    lines = [f"{len(jobs)} job(s) of that name are enqueued:"]
    lines.extend(f"  - {job.describe()}" for job in jobs[:MESSAGE_JOBS_MAX])
    if len(jobs) > MESSAGE_JOBS_MAX:
        lines.append(f"  ... and {len(jobs) - MESSAGE_JOBS_MAX} more")
    return "\n".join(lines)


def assert_enqueued(
    job: JobRef,
    /,
    *,
    options: Mapping[str, Any] | None = None,
    driver: JobDriver | None = None,
    **input_subset: Any,
) -> EnqueuedJob:
    """Assert that a queued job of ``job`` has at least the given input fields, and the row
    columns of ``options`` (``queue``, ``priority``, ``tenant``, ``idempotency_key``,
    ``enqueued_by``); answer the first such job, oldest first. The failure message lists what
    is enqueued under that name, its sensitive fields redacted."""
    name = job_name(job)
    wanted = _check_options(options)
    jobs = enqueued_jobs(name, driver=driver)
    for candidate in jobs:
        if matches(candidate, input_subset, wanted):
            return candidate
    raise AssertionError(
        f"expected a queued job {_expectation(name, input_subset, wanted)}; " + _listing(name, jobs)
    )


def assert_not_enqueued(
    job: JobRef,
    /,
    *,
    options: Mapping[str, Any] | None = None,
    driver: JobDriver | None = None,
    **input_subset: Any,
) -> None:
    """Assert that no queued job of ``job`` has the given input fields and ``options``
    columns (with neither, that no job of that name is queued at all). The failure message
    lists the jobs that matched, redacted."""
    name = job_name(job)
    wanted = _check_options(options)
    found = [j for j in enqueued_jobs(name, driver=driver) if matches(j, input_subset, wanted)]
    if found:
        lines = "\n".join(f"  - {j.describe()}" for j in found[:MESSAGE_JOBS_MAX])
        raise AssertionError(
            f"expected no queued job {_expectation(name, input_subset, wanted)}; "
            f"{len(found)} matched:\n{lines}"
        )
