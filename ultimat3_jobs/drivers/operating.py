"""The operator's part of the seam: the reads and writes of :mod:`ultimat3_jobs.operator`, the
admin and the CLI (look up, list, promote, remove, requeue; pauses; queue counts; counters).
:class:`~ultimat3_jobs.drivers.job_driver.JobDriver` inherits it; the rules of that module hold
here too."""

from __future__ import annotations

import abc
import uuid
from collections.abc import Sequence
from datetime import datetime

import ultimat3_jobs.types as types
from ultimat3_jobs.drivers.common import QUEUE_STATS_ROWS, JobListQuery, check_job_list


class OperatorSeam(abc.ABC):
    """The operator methods every :class:`~ultimat3_jobs.drivers.job_driver.JobDriver` has;
    named and ruled like the rest of the seam."""

    @abc.abstractmethod
    def job_get(self, *, job_id: uuid.UUID) -> types.JobRecord | None:
        """The job with that id, or ``None``."""

    def job_list(
        self,
        *,
        states: Sequence[str] | None = None,
        queues: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
        tenant: str | None = None,
        search: str | None = None,
        after: uuid.UUID | str | None = None,
        limit: int = 50,
    ) -> types.JobPage:
        """One page of jobs, newest first by ``(created_at, id)``, for an operator. Each filter
        is ``None`` (any) or matches exactly: ``states``, ``queues`` and ``names`` any of their
        values, ``tenant`` the tenant id, ``search`` a job id or an idempotency key.

        ``after`` is the ``next_cursor`` of the previous page (or its text): the id of its last
        job. The page continues below that job's own ``(created_at, id)``, read from its row, so
        a cursor carries no filter and no time of its own. Refused with
        :class:`~ultimat3_jobs.errors.JobPageInvalid`: ``limit`` outside 1 to
        :data:`JOB_PAGE_MAX`, an unknown state, and a cursor whose job is gone.

        Cost (PostgreSQL): a page with no filter, or filtered by state or name, walks
        ``x_jobs_newest`` in ``(created_at, id)`` order and stops after the page. No index
        covers the idempotency key alone or the tenant, so a ``search`` (which matches keys as
        well as ids) or a tenant filter reads the whole table: about a second for a million
        rows."""
        query = check_job_list(
            states=states,
            queues=queues,
            names=names,
            tenant=tenant,
            search=search,
            after=after,
            limit=limit,
        )
        return self.job_list_page(query=query)

    @abc.abstractmethod
    def job_list_page(self, *, query: JobListQuery) -> types.JobPage:
        """The page :meth:`job_list` answers, for its arguments as :func:`check_job_list`
        checked them (the one place they are checked)."""

    @abc.abstractmethod
    def job_promote(self, *, job_id: uuid.UUID) -> bool:
        """Make a queued job that is due later due now (``run_at`` = now), and wake the
        workers of its queue. Answers whether it landed: ``False`` for a missing job, a job
        that is not queued, and a queued job already due (left as it is, so that its place in
        claim order does not move)."""

    @abc.abstractmethod
    def job_remove(self, *, job_id: uuid.UUID) -> bool:
        """Delete a job that is not running (queued or finished), with its history; counters
        do not move. Answers whether it landed: ``False`` for a missing job and for a running
        one, which must be cancelled first (the operator verb refuses it with
        :class:`~ultimat3_jobs.errors.JobNotRemovable`)."""

    @abc.abstractmethod
    def job_requeue(self, *, job_id: uuid.UUID) -> None:
        """Put a finished job (completed, failed, cancelled) back to ``queued``, due now, with
        its attempt count reset and its error history kept. Refuses with
        :class:`~ultimat3_jobs.errors.JobNotFound`,
        :class:`~ultimat3_jobs.errors.JobNotRequeueable` (queued or running) or
        :class:`~ultimat3_jobs.errors.JobDuplicate` (another live job holds its key)."""

    @abc.abstractmethod
    def job_requeue_failed(self, *, name: str, limit: int) -> types.BulkResult:
        """Put up to ``limit`` failed jobs of job name ``name`` back to ``queued`` in one write,
        oldest first, as :meth:`job_requeue` does (due now, attempts reset, errors kept), and
        wake the workers of their queues. Refuses none: a job whose idempotency key a live job
        holds is skipped, and of failed jobs sharing one key only the newest is requeued (two
        live jobs cannot share a key). Answers how many moved and how many failed jobs of that
        name remain (skipped ones, and those past ``limit``). ``limit <= 0`` moves nothing."""

    # -- queues and pauses ----------------------------------------------------------------

    @abc.abstractmethod
    def pause_add(
        self, *, scope: types.PauseScope, target: str, paused_by: str = "", reason: str = ""
    ) -> bool:
        """Pause a queue, a job name or a cron. Answers whether it was not paused before."""

    @abc.abstractmethod
    def pause_list(self) -> list[types.Pause]:
        """Every pause, oldest first."""

    @abc.abstractmethod
    def pause_remove(self, *, scope: types.PauseScope, target: str) -> bool:
        """Lift a pause. Answers whether there was one."""

    @abc.abstractmethod
    def queue_demand(self, *, queues: Sequence[str]) -> dict[str, int]:
        """Per queue, how many jobs are ready to claim now, counted up to
        :data:`QUEUE_DEMAND_ROWS`; 0 for a paused queue."""

    @abc.abstractmethod
    def queue_stats(self, *, limit: int = QUEUE_STATS_ROWS) -> list[types.QueueStats]:
        """Per queue and state that holds a job, how many, in one read, by queue then state.
        ``queued`` and ``running`` are exact, and ``queued`` carries how long its oldest due
        job has waited. Finished states are counted up to ``limit`` rows per job name and
        state (``exact`` is then False); past the limit, which queue a job name's counted rows
        come from is the store's choice. Paused queues are counted like any other.

        Cost (PostgreSQL): live rows through the partial indexes ``x_jobs_claim`` (index only)
        and ``x_jobs_lease``: the backlog and the work in flight, not the history. Finished
        rows through ``x_jobs_name_finished``: one seek per job name to find the names, then an
        ordered index scan that stops after ``limit`` rows per name and finished state. On a
        table of a million rows and 20 job names: about 20 ms. A very deep backlog (the
        queued count reads every queued index entry) can lift the estimated cost past
        ``jit_above_cost``; set ``jit = off`` for the role if JIT compilation shows up."""

    def queue_pause(self, *, queue: str, paused_by: str = "", reason: str = "") -> bool:
        """Pause a queue: its jobs stay queued until :meth:`queue_resume`."""
        return self.pause_add(scope="queue", target=queue, paused_by=paused_by, reason=reason)

    def queue_resume(self, *, queue: str) -> bool:
        """Resume a paused queue."""
        return self.pause_remove(scope="queue", target=queue)

    # -- counters ---------------------------------------------------------------------------

    @abc.abstractmethod
    def counter_read(
        self, *, since: datetime, period: types.CounterPeriod = "minute"
    ) -> list[types.CounterRow]:
        """The counter rows of ``period`` whose bucket starts at or after ``since`` truncated to
        the period (so the bucket holding ``since`` is included), by bucket then name."""

    @abc.abstractmethod
    def counter_rollup(self, *, keep_seconds: float) -> int:
        """Fold minute rows into hour rows, in one write: every minute row whose hour ended
        more than ``keep_seconds`` ago is added to its hour's row and deleted. Answers how many
        minute rows were folded. Safe to run from several processes at once: a row is folded
        by whichever write deletes it."""

    @abc.abstractmethod
    def counter_total(self) -> list[types.CounterTotal]:
        """Per job name, its counts summed over every bucket of both periods, by name: what
        has settled since the counters began. A bucket counts in one period only (a rollup
        that writes hour rows must delete the minute rows it folds, in the same write).

        Cost (PostgreSQL): reads the whole ``x_job_counters`` table, one row per job name and
        minute that settled something."""
