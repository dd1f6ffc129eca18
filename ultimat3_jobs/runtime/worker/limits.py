"""``LeaseGate``: the leases a claimed run must hold before its body starts (the job's declared
``concurrency`` and ``rate``, see :mod:`ultimat3_jobs.model.limits`).

The claim loop asks :meth:`LeaseGate.admit` for each claimed job, right after the claim, before
the job gets a slot. A job without limits passes with no statement. Otherwise one
``lease_acquire`` takes every slot it needs, all or nothing:

- granted: the run starts;
- a full key, ``when_busy="wait"`` (and every rate): the job is shed back to ``queued``, due a
  little later, its attempt given back, no error, no counter, no ``on_settled``. The delay is
  the rate stamp's wait, or for a busy concurrency key one that grows with the sheds of that key
  this worker made lately, so a crowd of jobs of one busy key spreads out instead of coming back
  together. No hot spin: a shed job counts as not found, so a claim that only shed backs the
  loop off as an empty one does, and the next claim asks for one job only (a probe) until a run
  is admitted again; only a rate stamp's wait, which is exact, brings the loop back early;
- a full key, ``when_busy="fail"``, and evidence another live run holds it (its holder rows,
  another job's): failed for good without running the body, counted ``refused``,
  ``on_settled(ctx, "refused")``;
- a key function that answers no short string: the attempt fails for good with
  :class:`~ultimat3_jobs.errors.ConcurrencyKeyInvalid`; the worker goes on.

A granted run that never started (lost, cancelled) abandons its slots when it is done
(:meth:`LeaseGate.done`): a rate stamp stays spent.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence

from ultimat3_jobs.drivers.base import JobDriver, LeaseGrant, LeaseHolder
from ultimat3_jobs.errors import ConcurrencyKeyInvalid, ConcurrencyUnenforceable
from ultimat3_jobs.model.definitions import JobDefinition
from ultimat3_jobs.model.limits import lease_requests
from ultimat3_jobs.model.policy import ENDINGS, Ending, after_failure
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.runtime.worker.attempt import Attempt, context_for
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import ERROR_MESSAGE_LIMIT, storable
from ultimat3_jobs.runtime.worker.limiter import ProcessLimiter
from ultimat3_jobs.runtime.worker.settle import run_settled_hook
from ultimat3_jobs.types import AttemptError, ClaimedJob

logger = logging.getLogger("ultimat3_jobs.worker")

SHED_BASE_SECONDS = 0.05
"""A busy concurrency key's first shed waits about this long; each shed of the key within
:data:`SHED_WINDOW_SECONDS` adds as much again, up to :data:`SHED_CAP_SECONDS`."""
SHED_CAP_SECONDS = 30.0
SHED_WINDOW_SECONDS = 30.0
RATE_SLACK_SECONDS = 0.01
KEY_BUSY = "ultimat3_jobs.KeyBusy"
"""The error class recorded on a job refused because another live run holds its key."""


def unenforceable(
    driver: JobDriver, definitions: Iterable[JobDefinition]
) -> ConcurrencyUnenforceable | None:
    """The refusal for declared limits on a driver that keeps no leases; ``None`` when every
    limit can be enforced (or none is declared)."""
    if driver.has_lease_store:
        return None
    limited = sorted(d.name for d in definitions if d.limited)
    if not limited:
        return None
    return ConcurrencyUnenforceable(
        f"driver {driver.name!r} keeps no leases, so the concurrency or rate of "
        f"{', '.join(limited[:10])}{' ...' if len(limited) > 10 else ''} cannot be enforced: "
        "use a driver with a lease store (postgres, redis, memory) or remove the limits",
        field="concurrency",
        rule="lease-store",
    )


class ShedPacer:
    """How long a job shed for a busy concurrency key waits: longer the more jobs of that key
    this worker shed within the window, jittered, capped."""

    def __init__(self, *, rng: random.Random | None = None) -> None:
        self._recent: dict[str, tuple[int, float]] = {}
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def delay(self, key: str) -> float:
        now = time.monotonic()
        with self._lock:
            count, since = self._recent.get(key, (0, now))
            if now - since > SHED_WINDOW_SECONDS:
                count, since = 0, now
            count += 1
            self._recent[key] = (count, since)
            if len(self._recent) > 10_000:  # forget the oldest keys
                for old in sorted(self._recent, key=lambda k: self._recent[k][1])[:5_000]:
                    del self._recent[old]
        wait = min(SHED_CAP_SECONDS, SHED_BASE_SECONDS * count)
        return wait * self._rng.uniform(0.5, 1.5)


class LeaseGate:
    """Admits claimed runs by their leases; see the module's rules."""

    def __init__(
        self,
        *,
        driver: JobDriver,
        worker_id: str,
        hooks: BodyPool,
        on_shed: Callable[[float], None] | None = None,
    ) -> None:
        self._driver = driver
        self._worker_id = worker_id
        self._hooks = hooks
        self._on_shed = on_shed
        self._pacer = ShedPacer()
        self._held: set[tuple[uuid.UUID, uuid.UUID]] = set()
        self._lock = threading.Lock()
        self.shed = 0
        self.refused = 0
        self.by_name: dict[str, dict[str, int]] = {"shed": {}, "refused": {}}
        """Sheds and refusals per job name since this gate began (the worker's registry row
        reports them)."""

    def admit(self, job: ClaimedJob, definition: JobDefinition | None) -> bool:
        """Whether the run may start now; when not, its job was settled here (shed, refused or
        failed) or is no longer this worker's."""
        if definition is None or not definition.limited:
            return True
        try:
            requests = lease_requests(
                definition.name, definition.concurrency, definition.rate, job.input
            )
        except ConcurrencyKeyInvalid as exc:
            self._fail(job, definition, exc)
            return False
        try:
            grant = self._driver.lease_acquire(
                job_id=job.id, claim_token=job.claim_token, requests=requests
            )
            if grant.granted:
                with self._lock:
                    self._held.add((job.id, job.claim_token))
                return True
            if grant.busy_key is None:
                logger.info("jobs.lease.fenced: %s %s is no longer held", job.name, job.id)
                return False
            is_rate = {r.key: r.kind for r in requests}.get(grant.busy_key) == "rate"
            concurrency = definition.concurrency
            refusing = not is_rate and concurrency is not None and concurrency.when_busy == "fail"
            if refusing and self._refuse(job, definition, grant):
                return False
            self._shed(job, grant, is_rate=is_rate)
        except STORE_ERRORS as exc:
            logger.warning("jobs.lease.failed: %s %s: %s; released", job.name, job.id, exc)
            self._driver.reset_connection()
            try:
                self._give_back(job, delay=SHED_BASE_SECONDS, exact=False)
            except STORE_ERRORS:
                logger.warning("jobs.lease.release_failed: %s stays leased until rescued", job.id)
        return False

    def done(self, attempt: Attempt) -> None:
        """The attempt is over: a granted run whose body never started abandons its slots."""
        pair = (attempt.job.id, attempt.job.claim_token)
        with self._lock:
            if pair not in self._held:
                return
            self._held.discard(pair)
        if attempt.began:
            return  # the settle or the rescue statement freed its slots
        try:
            self._driver.lease_abandon(job_id=pair[0], claim_token=pair[1])
        except STORE_ERRORS as exc:
            logger.warning("jobs.lease.abandon_failed: %s: %s; it expires", pair[0], exc)
            self._driver.reset_connection()

    # -- endings --------------------------------------------------------------------------------

    def _shed(self, job: ClaimedJob, grant: LeaseGrant, *, is_rate: bool) -> None:
        key = grant.busy_key or ""
        if is_rate:
            delay = grant.retry_after + RATE_SLACK_SECONDS * random.uniform(1.0, 2.0)
        else:
            delay = self._pacer.delay(key)
        if self._give_back(job, delay=delay, exact=is_rate):
            self.shed += 1
            self._count("shed", job.name)
            logger.debug(
                "jobs.lease.shed: %s %s: %s busy; due in %.2fs", job.name, job.id, key, delay
            )

    def _give_back(self, job: ClaimedJob, *, delay: float, exact: bool) -> bool:
        """Back to ``queued`` due in ``delay`` s; ``exact``: a rate stamp's wait, which the
        loop comes back for (``on_shed``); a busy key's paced delay is left to the poll."""
        landed = self._driver.job_nack(
            job_id=job.id,
            claim_token=job.claim_token,
            action="retry",
            delay_seconds=delay,
            counts_as_attempt=False,
        )
        if landed and exact and self._on_shed is not None:
            self._on_shed(delay)
        return landed

    def counts(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {what: dict(names) for what, names in self.by_name.items() if names}

    def _count(self, what: str, name: str) -> None:
        with self._lock:
            counts = self.by_name[what]
            counts[name] = counts.get(name, 0) + 1

    def _refuse(self, job: ClaimedJob, definition: JobDefinition, grant: LeaseGrant) -> bool:
        """Refuse the job when another live run holds its key; False without that evidence
        (the key emptied meanwhile: the caller sheds it, and the next claim tries again)."""
        key = grant.busy_key or ""
        others = [h for h in self._driver.lease_holders(key=key) if h.job_id != job.id]
        if not others:
            return False
        error = self._error(job, KEY_BUSY, _busy_message(key, others))
        if self._driver.job_nack(
            job_id=job.id,
            claim_token=job.claim_token,
            action="fail",
            error=error,
            counts_as_attempt=False,
        ):
            self.refused += 1
            self._count("refused", job.name)
            logger.info("jobs.lease.refused: %s %s: %s is held", job.name, job.id, key)
            self._ended(job, definition, "refused")
        return True

    def _fail(self, job: ClaimedJob, definition: JobDefinition, exc: ConcurrencyKeyInvalid) -> None:
        kind = type(exc)
        error = self._error(job, f"{kind.__module__}.{kind.__qualname__}", str(exc))
        decision = after_failure(
            definition, attempt=job.attempt, max_attempts=job.max_attempts, terminal=True
        )
        try:
            landed = self._driver.job_nack(
                job_id=job.id, claim_token=job.claim_token, action=decision.action, error=error
            )
        except STORE_ERRORS as err:
            logger.warning("jobs.lease.failed: %s %s: %s", job.name, job.id, err)
            self._driver.reset_connection()
            return
        ending = ENDINGS[decision.action]
        if landed and ending is not None:
            self._ended(job, definition, ending)

    def _error(self, job: ClaimedJob, error_class: str, message: str) -> AttemptError:
        return AttemptError(
            attempt=job.attempt,
            error_class=error_class,
            message=storable(message)[:ERROR_MESSAGE_LIMIT],
            traceback="",
            worker_id=self._worker_id,
        )

    def _ended(self, job: ClaimedJob, definition: JobDefinition, ending: Ending) -> None:
        if definition.on_settled is None:
            return
        ctx = context_for(job, definition)
        self._hooks.submit(run_settled_hook, definition.on_settled, ctx, ending)


class WorkerLimits:
    """Every limit the worker keeps, behind the loop's few hooks: refused at start when a
    declared limit cannot be enforced (:func:`unenforceable`); the per-process limiter before
    each claim (``limiter.py``); the lease gate after it. A claimed job that goes back to wait
    for a rate stamp, due in ``delay`` s, calls ``on_retry(delay)``, so the idle loop looks
    again by then; after a claim whose every job was shed the next claim is a probe of one."""

    def __init__(
        self,
        driver: JobDriver,
        registry: Registry,
        config: WorkerConfig,
        hooks: BodyPool,
        on_retry: Callable[[float], None],
    ) -> None:
        refused = unenforceable(driver, registry.definitions())
        if refused is not None:
            raise refused
        self._registry = registry
        self._probing = False
        self.limiter = ProcessLimiter(config.limits)
        self.gate = LeaseGate(
            driver=driver, worker_id=config.worker_id, hooks=hooks, on_shed=on_retry
        )

    def plan(
        self, queues: tuple[str, ...], want: int, running: Callable[[], Sequence[Attempt]]
    ) -> tuple[int, tuple[str, ...], float | None]:
        """How many to claim from which queues, and how long the loop waits after a full claim
        (``None``: until a slot frees)."""
        if self._probing:
            want = min(want, 1)
        if not self.limiter.active or want <= 0:
            return want, queues, None
        plan = self.limiter.plan(queues, want, running())
        return plan.limit, plan.queues, plan.retry_in

    def admit(self, jobs: list[ClaimedJob]) -> list[ClaimedJob]:
        """The claimed jobs whose runs may start (spending the limiter's rate); the others were
        shed, refused or failed here."""
        self.limiter.took(len(jobs))
        shed = self.gate.shed
        admitted = [job for job in jobs if self.gate.admit(job, self._definition(job))]
        if admitted:
            self._probing = False
        elif self.gate.shed > shed:
            self._probing = True  # every job went back to wait: the next claim probes
        return admitted

    def done(self, attempt: Attempt) -> None:
        self.gate.done(attempt)

    def counts(self) -> dict[str, dict[str, int]]:
        """The gate's sheds and refusals per job name since the worker started, for its
        registry row (``{"shed": {name: n}, "refused": {name: n}}``, empty kinds left out)."""
        return self.gate.counts()

    def _definition(self, job: ClaimedJob) -> JobDefinition | None:
        handle = self._registry.find(job.name)
        return handle.definition if handle is not None else None


def _busy_message(key: str, holders: list[LeaseHolder]) -> str:
    ids = ", ".join(str(h.job_id) for h in holders[:5])
    return f"another live run holds {key} (job {ids}); when_busy='fail' refuses this one"
