"""``LeaseGate``: the leases a run must hold before its body starts (the job's declared
``concurrency`` and ``rate``, see :mod:`ultimat3_jobs.model.limits`).

The worker asks :meth:`LeaseGate.start` for the attempts it gives body slots, as it does, not
at the claim: an attempt claimed ahead, waiting for a slot, holds no lease. A job without limits
passes with no statement. Otherwise one ``lease_acquire_many`` takes, for every run started
together, every slot each needs, all or nothing per run:

- granted, or lent a slot of the key whose run's body ended (``handoff.py``, no statement):
  the run starts (:data:`RUN`);
- the worker holds as many slots of the key as it has body slots, some of them ended runs'
  (asked nothing) or all in use by short bodies, or the store answered the key full while
  ended runs of the worker hold some (``holdings.py``): the attempt waits in the worker
  (:data:`PARK`) until a slot is lent to it or one of those settles lands;
- a full key, ``when_busy="wait"`` (and every rate): the job is shed back to ``queued``, due a
  little later (``pacing.py``), its attempt given back, no error, no counter, no
  ``on_settled``. No hot spin: a shed job counts as not found, so a claim that only shed backs
  the loop off as an empty one does, and the next claim asks for one job only (a probe) until a
  run is admitted again; only a rate stamp's wait, which is exact, brings the loop back early;
- a full key, ``when_busy="fail"``, and evidence another live run holds it (its holder rows,
  another job's): failed for good without running the body, counted ``refused``,
  ``on_settled(ctx, "refused")``;
- a key function that answers no short string: the attempt fails for good with
  :class:`~ultimat3_jobs.errors.ConcurrencyKeyInvalid`; the worker goes on.

Each of the last three is :data:`GONE`: the job is no longer this worker's. A granted run that
never started abandons its slots when it is done (:meth:`LeaseGate.done`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from ultimat3_jobs.drivers.base import JobDriver, LeaseGrant, LeaseRequest, LeaseRun
from ultimat3_jobs.errors import ConcurrencyKeyInvalid, ConcurrencyUnenforceable
from ultimat3_jobs.model.definitions import JobDefinition
from ultimat3_jobs.model.policy import ENDINGS, Ending, after_failure
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.runtime.common.pool import BodyPool
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.runtime.worker.attempt import Attempt, context_for
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.runtime.worker.execute import ERROR_MESSAGE_LIMIT, storable
from ultimat3_jobs.runtime.worker.holdings import Holdings
from ultimat3_jobs.runtime.worker.limiter import ProcessLimiter
from ultimat3_jobs.runtime.worker.pacing import SHED_BASE_SECONDS, SHED_CAP_SECONDS, ShedPacer
from ultimat3_jobs.runtime.worker.settle import run_settled_hook
from ultimat3_jobs.types import AttemptError, ClaimedJob

__all__ = ["SHED_CAP_SECONDS", "LeaseGate", "ShedPacer", "WorkerLimits", "unenforceable"]

logger = logging.getLogger("ultimat3_jobs.worker")

KEY_BUSY = "ultimat3_jobs.KeyBusy"
"""The error class recorded on a job refused because another live run holds its key."""

Verdict = Literal["run", "park", "gone"]
RUN: Verdict = "run"
PARK: Verdict = "park"
GONE: Verdict = "gone"


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


class LeaseGate:
    """Admits runs by their leases as they get a body slot; see the module's rules.
    ``slots``: the worker's body slots, the most slots of one key it holds at once."""

    def __init__(
        self,
        *,
        driver: JobDriver,
        worker_id: str,
        hooks: BodyPool,
        on_shed: Callable[[float], None] | None = None,
        slots: int | None = None,
    ) -> None:
        self._driver = driver
        self._worker_id = worker_id
        self._hooks = hooks
        self._on_shed = on_shed
        self._slots = slots
        self._pacer = ShedPacer()
        self.holdings: Holdings[Attempt] = Holdings()
        self._held: set[Attempt] = set()  # the runs granted leases, by identity
        self._lock = threading.Lock()
        self.shed = 0
        self.refused = 0
        self.gone = 0  # runs this gate ended without their body (shed, refused, failed, fenced)
        self.shedding = False  # the latest run this gate ended or admitted was shed: probe
        self.by_name: dict[str, dict[str, int]] = {"shed": {}, "refused": {}}
        """Sheds and refusals per job name since this gate began (its registry row's)."""
        self.lend: Callable[[Attempt], bool] | None = None
        """Lends the run an ended run's slot of its key, if one is free (``handoff.py``)."""
        self.asking: Callable[[], None] = lambda: None
        """Called before the lease statement: what could be lent was (``inflight.py``)."""

    def start(self, attempts: Sequence[Attempt]) -> list[Verdict]:
        """For each attempt, in order: whether its run may start now (:data:`RUN`), waits in
        the worker (:data:`PARK`) or is no longer this worker's (:data:`GONE`); the leases
        asked are taken in one ``lease_acquire_many``."""
        verdicts: list[Verdict] = [RUN] * len(attempts)
        asking: list[tuple[int, list[LeaseRequest], LeaseRequest | None]] = []
        batch: dict[str, int] = {}  # slots of a key asked in this call so far
        for i, attempt in enumerate(attempts):
            job, definition = attempt.job, attempt.definition
            if definition is None or not definition.limited:
                continue
            try:
                requests = definition.leases_for(job.input)
            except ConcurrencyKeyInvalid as exc:
                self._fail(job, definition, exc)
                verdicts[i] = GONE
                continue
            cap = requests[0] if requests[0].kind == "concurrency" else None  # asked first
            if cap is not None and self.lend is not None and self.lend(attempt):
                continue  # an ended run's slot of this worker's: it runs, no statement
            if cap is not None:
                asked = batch.get(cap.key, 0)
                bound = min(cap.limit, self._slots or cap.limit) - asked
                if self.holdings.waits(cap.key, bound):
                    verdicts[i] = PARK
                    continue
                batch[cap.key] = asked + 1
            asking.append((i, requests, cap))
        if asking:
            runs = [
                LeaseRun(
                    job_id=attempts[i].job.id,
                    claim_token=attempts[i].job.claim_token,
                    requests=requests,
                )
                for i, requests, _ in asking
            ]
            grants: list[LeaseGrant | None] = [None] * len(runs)  # None: the store failed
            self.asking()
            try:
                grants[:] = self._driver.lease_acquire_many(runs=runs)
            except STORE_ERRORS as exc:
                logger.warning("jobs.lease.failed: %s runs: %s; released", len(runs), exc)
                self._driver.reset_connection()
            for (i, requests, cap), grant in zip(asking, grants, strict=True):
                verdicts[i] = self._answer(attempts[i], requests, cap, grant)
        if not self.shedding and GONE not in verdicts:  # no count to move (no limited run's)
            return verdicts
        with self._lock:
            self.gone += verdicts.count(GONE)
            if RUN in verdicts:
                self.shedding = False
        return verdicts

    def _answer(
        self,
        attempt: Attempt,
        requests: list[LeaseRequest],
        cap: LeaseRequest | None,
        grant: LeaseGrant | None,
    ) -> Verdict:
        """What the store's ``grant`` means for the run (``None``: the store failed)."""
        job, definition = attempt.job, attempt.definition
        assert definition is not None
        try:
            if grant is None:
                self._give_back(job, delay=SHED_BASE_SECONDS, exact=False)
                return GONE
            if grant.granted:
                self.granted(attempt, None if cap is None else cap.key)
                return RUN
            if grant.busy_key is None:
                logger.info("jobs.lease.fenced: %s %s is no longer held", job.name, job.id)
                return GONE
            is_rate = {r.key: r.kind for r in requests}.get(grant.busy_key) == "rate"
            if not is_rate and self.holdings.settling(grant.busy_key):
                self.holdings.full(grant.busy_key)  # own ended runs free it as they settle
                return PARK
            concurrency = definition.concurrency
            refusing = not is_rate and concurrency is not None and concurrency.when_busy == "fail"
            if refusing and self._refuse(job, definition, grant):
                return GONE
            self._shed(job, grant, is_rate=is_rate)
        except STORE_ERRORS as exc:
            logger.warning("jobs.lease.failed: %s %s: %s", job.name, job.id, exc)
            self._driver.reset_connection()
            try:
                self._give_back(job, delay=SHED_BASE_SECONDS, exact=False)
            except STORE_ERRORS:
                logger.warning("jobs.lease.release_failed: %s stays leased until rescued", job.id)
        return GONE

    def granted(self, attempt: Attempt, key: str | None) -> None:
        """The run holds its leases now (a slot of ``key`` among them, when given)."""
        with self._lock:
            self._held.add(attempt)
            self.shedding = False
        if key is not None:
            self.holdings.took(attempt, key)

    def ended(self, attempt: Attempt) -> None:  # its slots stay held until its settle lands
        self.holdings.ended(attempt)

    def done(self, attempt: Attempt) -> bool:
        """The attempt is over (settled, lost, suspended): a granted run whose body never
        started abandons its slots. Answers whether a concurrency slot of this worker's came
        free (runs parked for it may try again)."""
        if not self._held and self.holdings.none_held():  # no limits: nothing to look up
            return False
        freed = self.holdings.gone(attempt) is not None
        with self._lock:
            if attempt not in self._held:
                return freed
            self._held.discard(attempt)
        if attempt.began:
            return freed  # the settle or the rescue statement freed its slots
        job = attempt.job
        try:
            self._driver.lease_abandon(job_id=job.id, claim_token=job.claim_token)
        except STORE_ERRORS as exc:
            logger.warning("jobs.lease.abandon_failed: %s: %s; it expires", job.id, exc)
            self._driver.reset_connection()
        return freed

    # -- endings --------------------------------------------------------------------------------

    def _shed(self, job: ClaimedJob, grant: LeaseGrant, *, is_rate: bool) -> None:
        key = grant.busy_key or ""
        delay = self._pacer.rate_delay(grant.retry_after) if is_rate else self._pacer.delay(key)
        if self._give_back(job, delay=delay, exact=is_rate):
            self.shed += 1
            self.shedding = True
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
            self.by_name[what][name] = self.by_name[what].get(name, 0) + 1

    def _refuse(self, job: ClaimedJob, definition: JobDefinition, grant: LeaseGrant) -> bool:
        """Refuse the job when another live run holds its key; False without that evidence
        (the key emptied meanwhile: the caller sheds it, and the next claim tries again)."""
        key = grant.busy_key or ""
        others = [h for h in self._driver.lease_holders(key=key) if h.job_id != job.id]
        if not others:
            return False
        ids = ", ".join(str(h.job_id) for h in others[:5])
        message = f"another live run holds {key} (job {ids}); when_busy='fail' refuses this one"
        error = self._error(job, KEY_BUSY, message)
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
    each claim (``limiter.py``); the lease gate as each run gets a body slot. A claimed job
    that goes back to wait for a rate stamp, due in ``delay`` s, calls ``on_retry(delay)``, so
    the idle loop looks again by then; after a shed, until a run is admitted again, the next
    claim is a probe of one."""

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
        self.limiter = ProcessLimiter(config.limits)
        self.gate = LeaseGate(
            driver=driver,
            worker_id=config.worker_id,
            hooks=hooks,
            on_shed=on_retry,
            slots=config.concurrency,
        )
        # The loop's per-run hooks are the gate's own methods: a call less per run each.
        self.start, self.ended, self.done = self.gate.start, self.gate.ended, self.gate.done

    def plan(
        self, queues: tuple[str, ...], want: int, running: Callable[[], Sequence[Attempt]]
    ) -> tuple[int, tuple[str, ...], float | None]:
        """How many to claim from which queues, and how long the loop waits after a full claim
        (``None``: until a slot frees)."""
        if self.gate.shedding:
            want = min(want, 1)
        if not self.limiter.active or want <= 0:
            return want, queues, None
        plan = self.limiter.plan(queues, want, running())
        return plan.limit, plan.queues, plan.retry_in

    def took(self, jobs: list[ClaimedJob]) -> None:
        """A claim took ``jobs``: they spend the limiter's rate."""
        self.limiter.took(len(jobs))

    def gone(self) -> int:
        """How many runs the gate ended without their body so far (a mark for :meth:`found`)."""
        return self.gate.gone

    def found(self, claimed: int, mark: int) -> int:
        """Of ``claimed`` jobs, how many count as found: less the runs the gate ended since
        ``mark`` (a shed job counts as not found, so the loop backs off)."""
        return max(0, claimed - (self.gate.gone - mark))

    def freed(self) -> int:
        """How many of this worker's slots came free so far (a mark: one came free since)."""
        return self.gate.holdings.freed

    def counts(self) -> dict[str, dict[str, int]]:
        """The gate's sheds and refusals per job name, for the worker's registry row."""
        return self.gate.counts()
