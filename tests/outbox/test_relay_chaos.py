"""The outbox under real processes and real kills.

The test process is the caller: its transactions run on ``default`` while the job store is alias
``jobs``, so every enqueue inside them is staged in ``x_outbox``. Relays and workers are
subprocesses (``tests/outbox/processes.py``, settings ``tests.settings_outbox``: relay lease
2 s, batches of 20, polls from 0.02 s to 1 s).

* R7: 1,000 caller transactions from a few threads, half of them rolled back (a seeded draw),
  while the relay is SIGKILLed again and again and restarted each time. The job store ends
  holding exactly the jobs of the committed transactions, each once, all published within 10 s
  of the last commit.
* A caller process SIGKILLed before its COMMIT leaves neither a staged row nor a job.
* With ``jobs_worker --with-relay``, a committed staged job runs exactly once and a rolled-back
  one never runs.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable

import pytest
from django.db import connections, transaction
from django.db.models import QuerySet

from tests.outbox.processes import RELAY_STARTED, WORKER_STARTED, Processes
from tests.settings_outbox import ULTIMAT3_JOBS as SUBPROCESS_SETTINGS
from tests.testapp import jobs
from tests.testapp.models import Effect
from ultimat3_jobs.models import Job, OutboxEntry
from ultimat3_jobs.types import EnqueueResult

pytestmark = [
    pytest.mark.process,
    pytest.mark.django_db(transaction=True, databases=["default", "jobs"]),
    pytest.mark.usefixtures("other_store"),
]

SEED = 20261129
TRANSACTIONS = 1000
CALLERS = 4
ROLLBACK_SHARE = 0.5
PACE_SECONDS = (0.02, 0.07)
"""The pause between two transactions of one caller thread: the run lasts about 12 s, long
enough for the kills below to land while transactions commit."""
MIN_KILLS = 5
PUBLISH_BOUND_SECONDS = 10.0
RELAY_LEASE = float(SUBPROCESS_SETTINGS["RELAY_LEASE_SECONDS"])
POLL_CEILING = float(SUBPROCESS_SETTINGS["POLL_CEILING_WAKE_SECONDS"])


def store_jobs() -> QuerySet[Job]:
    return Job.objects.using("jobs")


def unpublished() -> int:
    return OutboxEntry.objects.filter(published_at__isnull=True).count()


def stays_true(check: Callable[[], bool], seconds: float, what: str) -> None:
    """``check`` holds at every look for ``seconds`` (several relay polls)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), what
        time.sleep(0.05)


class Caller(threading.Thread):
    """Runs its share of the transactions: each stages one job, then commits or rolls back as
    the plan says."""

    def __init__(self, number: int, plan: list[bool]) -> None:
        super().__init__(name=f"caller-{number}", daemon=True)
        self.number = number
        self.plan = plan
        self.outcomes: list[tuple[int, EnqueueResult, bool]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        pace = random.Random(SEED + 1 + self.number)
        try:
            for index in range(self.number, len(self.plan), CALLERS):
                roll_back = self.plan[index]
                with transaction.atomic():
                    result = jobs.echo.enqueue(i=index)
                    if roll_back:
                        transaction.set_rollback(True)
                self.outcomes.append((index, result, not roll_back))
                time.sleep(pace.uniform(*PACE_SECONDS))
        except BaseException as exc:
            self.error = exc
        finally:
            connections.close_all()


def test_r7_published_equals_committed_while_the_relay_is_killed(processes: Processes) -> None:
    draw = random.Random(SEED)
    plan = [draw.random() < ROLLBACK_SHARE for _ in range(TRANSACTIONS)]
    kill_draw = random.Random(SEED + 100)

    relay = processes.relay("relay-00")
    callers = [Caller(number, plan) for number in range(CALLERS)]
    for caller in callers:
        caller.start()
    kills_while_committing = kills = 0
    while any(c.is_alive() for c in callers) or kills < MIN_KILLS:
        processes.wait_log(relay, RELAY_STARTED, what=f"{relay.name} started")
        # Half the kills land as the new relay takes the backlog that piled up while it was
        # down; the others at any point of its polling.
        early = kill_draw.random() < 0.5
        time.sleep(kill_draw.uniform(0.0, 0.05) if early else kill_draw.uniform(0.2, 1.0))
        kills_while_committing += any(c.is_alive() for c in callers)
        relay.kill()
        kills += 1
        relay = processes.relay(f"relay-{kills:02d}")
    for caller in callers:
        caller.join(30)
        assert not caller.is_alive()
        assert caller.error is None, f"{caller.name} failed: {caller.error!r}"

    outcomes = [outcome for caller in callers for outcome in caller.outcomes]
    assert len(outcomes) == TRANSACTIONS
    assert {result.status for _, result, _ in outcomes} == {"staged"}
    committed = {result.id for _, result, kept in outcomes if kept}
    rolled_back = {result.id for _, result, kept in outcomes if not kept}
    assert len(committed) + len(rolled_back) == TRANSACTIONS, "a job id was answered twice"

    processes.wait(lambda: unpublished() == 0, timeout=30, what="every staged row published")
    assert relay.alive(), relay.tail()

    store_ids = list(store_jobs().values_list("id", flat=True))
    assert len(store_ids) == len(set(store_ids)), "a job id is in the store twice"
    assert set(store_ids) == committed, (
        f"{len(committed - set(store_ids))} committed jobs missing, "
        f"{len(set(store_ids) - committed)} jobs that were never committed"
    )
    assert not set(store_ids) & rolled_back
    indexes = [job_input["i"] for job_input in store_jobs().values_list("input", flat=True)]
    assert len(indexes) == len(set(indexes)), "one transaction's job was published twice"
    assert set(indexes) == {index for index, _, kept in outcomes if kept}
    staged_rows = set(OutboxEntry.objects.values_list("id", flat=True))
    assert staged_rows == committed, "a rolled-back transaction left a staged row"

    # Publication times, all on the database server's clock. A row's created_at is taken while
    # it is staged, just before its transaction's COMMIT, so each latency below is an upper
    # bound.
    staged_at = dict(OutboxEntry.objects.values_list("id", "created_at"))
    marked_at = dict(OutboxEntry.objects.values_list("id", "published_at"))
    published_at = dict(store_jobs().values_list("id", "created_at"))
    last_commit = max(staged_at.values())
    after_last_commit = (max(published_at.values()) - last_commit).total_seconds()
    latencies = sorted((published_at[i] - staged_at[i]).total_seconds() for i in committed)
    # A job marked a lease or so after it was written was published by a relay killed before
    # its mark, then published again (answered deduped) and marked by a later relay.
    republished = sum(
        (marked_at[i] - published_at[i]).total_seconds() > RELAY_LEASE / 2 for i in committed
    )
    print(
        f"\nR7: {TRANSACTIONS} transactions, {len(committed)} committed, "
        f"{len(rolled_back)} rolled back; relay SIGKILLed {kills} times "
        f"({kills_while_committing} while transactions were committing); "
        f"{len(store_ids)} jobs in the store, 0 duplicates; "
        f"last job published {after_last_commit:.2f} s after the last commit; "
        f"commit-to-publish p50 {statistics.median(latencies):.3f} s, "
        f"p99 {latencies[int(len(latencies) * 0.99) - 1]:.3f} s, max {latencies[-1]:.3f} s; "
        f"{republished} jobs published again by a later relay"
    )
    assert kills >= MIN_KILLS
    assert after_last_commit <= PUBLISH_BOUND_SECONDS, after_last_commit
    tracebacks = [p.tail() for p in processes.started if "Traceback" in p.log()]
    assert not tracebacks, "\n".join(tracebacks)


def session_state(backend: int) -> str | None:
    with connections["default"].cursor() as cursor:
        cursor.execute("select state from pg_stat_activity where pid = %s", [backend])
        row = cursor.fetchone()
    return None if row is None else str(row[0])


def test_a_caller_killed_before_commit_leaves_nothing(processes: Processes) -> None:
    relay = processes.relay("relay")
    processes.wait_log(relay, RELAY_STARTED)
    caller = processes.start("caller", ["-m", "tests.outbox.caller"])
    staged = processes.wait_log(caller, r"^STAGED (\S+) (\S+) (\d+) (\d+)$", what="staged")
    job_id, status, seen, backend = uuid.UUID(staged[1]), staged[2], int(staged[3]), int(staged[4])
    assert status == "staged"
    assert seen == 1, "the caller sees its own staged row inside its transaction"
    assert session_state(backend) == "idle in transaction"

    def nothing_of_it() -> bool:
        return (
            not OutboxEntry.objects.filter(id=job_id).exists()
            and not store_jobs().filter(id=job_id).exists()
        )

    # Uncommitted: neither the test nor the relay polling meanwhile sees the row.
    stays_true(nothing_of_it, 2 * POLL_CEILING, "an uncommitted staged row was seen")
    caller.kill()
    processes.wait(
        lambda: session_state(backend) is None, timeout=10, what="the caller's session ended"
    )

    # The relay is still at work: a committed job is published...
    with transaction.atomic():
        marker = jobs.noop.enqueue()
    processes.wait(
        lambda: store_jobs().filter(id=marker.id).exists(), timeout=10, what="marker published"
    )
    # ...and over several more of its polls, the dead caller's job never appears.
    stays_true(nothing_of_it, 3 * POLL_CEILING, "the killed caller's job appeared")
    assert list(OutboxEntry.objects.values_list("id", flat=True)) == [marker.id]
    assert list(store_jobs().values_list("id", flat=True)) == [marker.id]
    assert relay.alive(), relay.tail()


def test_a_committed_staged_job_runs_exactly_once_and_a_rolled_back_one_never(
    processes: Processes,
) -> None:
    worker = processes.command(
        "jobs_worker",
        "jobs_worker",
        "--with-relay",
        "--queues",
        "default",
        "--concurrency",
        "2",
        "--worker-id",
        "outbox-worker",
    )
    processes.wait_log(worker, WORKER_STARTED)
    processes.wait_log(worker, RELAY_STARTED)

    with transaction.atomic():
        kept = jobs.record.enqueue(n=1)
    with transaction.atomic():
        dropped = jobs.record.enqueue(n=2)
        transaction.set_rollback(True)
    assert kept.status == dropped.status == "staged"

    processes.wait(
        lambda: store_jobs().filter(id=kept.id, state="completed").exists(),
        timeout=20,
        what="the committed job completed",
    )
    # Several more polls of the relay and the worker change nothing.
    time.sleep(3 * POLL_CEILING)

    # The worker process writes Effect rows on its own "default" alias: this run's default
    # test database, the one the test reads through its "default" alias too.
    effects = list(Effect.objects.filter(job_id=kept.id).values_list("attempt", "worker_pid"))
    assert effects == [(1, worker.pid)], effects
    assert not Effect.objects.using("jobs").exists()
    job = store_jobs().get(id=kept.id)
    assert (job.state, job.attempt, job.result) == ("completed", 1, {"n": 1, "attempt": 1})
    assert OutboxEntry.objects.get(id=kept.id).published_at is not None

    assert not Effect.objects.filter(job_id=dropped.id).exists()
    assert not store_jobs().filter(id=dropped.id).exists()
    assert not OutboxEntry.objects.filter(id=dropped.id).exists()
    assert store_jobs().count() == 1
    assert worker.alive(), worker.tail()
