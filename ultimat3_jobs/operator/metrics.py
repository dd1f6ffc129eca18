"""The Prometheus exposition of queues, workers and settle counters, through ``prometheus_client``.

Layer L4 (processes). Needs the ``prometheus`` extra (``ultimat3-jobs[prometheus]``, which
installs ``prometheus-client``); importing this module without it raises ``ImproperlyConfigured``
saying so.

:class:`JobsCollector` is a ``prometheus_client`` custom collector: each ``collect()`` costs four
reads, ``queue_stats``, ``worker_list``, ``counter_total`` and ``lease_list`` (see their costs on
:class:`~ultimat3_jobs.drivers.base.JobDriver`; three on a driver without a lease store), and
``describe()`` none. :func:`exposition`
answers one scrape from a registry that holds this collector only, in the format the scraper's
``Accept`` header asks for: OpenMetrics for ``application/openmetrics-text``, else the text
format 0.0.4.

Families:

``ultimat3_jobs_queue_depth{queue,state}`` (gauge)
    Jobs per queue and state, every state of every known queue (0 where none). ``queued`` and
    ``running`` are exact; finished states are counted up to
    :data:`~ultimat3_jobs.drivers.base.QUEUE_STATS_ROWS` per job name, a lower bound beyond.
``ultimat3_jobs_queue_oldest_ready_seconds{queue}`` (gauge)
    How long the oldest due job of the queue has waited; 0 when none is due.
``ultimat3_jobs_queue_dead_jobs{queue}`` (gauge)
    Failed jobs kept as dead letters (the ``failed`` depth).
``ultimat3_jobs_queue_demand{queue}`` (gauge)
    The jobs of the queue that are due now (``queued`` with ``run_at`` passed), 0 while the
    queue is paused: read from the store by ``queue_stats``, so a backlog shows with no worker
    running, and an autoscaler can scale a queue's workers up from zero.
``ultimat3_jobs_queue_workers{queue}`` (gauge)
    Live workers that claim from the queue.
``ultimat3_jobs_jobs_settled{name,outcome}`` (counter; samples ``..._jobs_settled_total``)
    Settles per job name since the counters began (``completed``, ``retried``, ``dead``,
    ``dropped``, ``refused``, ``cancelled``): the sum of every counter bucket, minute and hour.
    It falls only if counter rows are deleted, which Prometheus reads as a counter reset.
``ultimat3_jobs_lease_slots_held{name}`` (gauge)
    Concurrency slots held now per job name (its fleet cap's key and every key of a keyed cap).
``ultimat3_jobs_lease_shed{name}`` (gauge)
    Jobs the live workers shed back to the queue since they started, their limit's key being
    busy (a shed is no settle: ``jobs_settled`` never counts it). It falls when a worker stops.
``ultimat3_jobs_lease_refused{name}`` (gauge)
    Jobs the live workers refused (``when_busy="fail"``) since they started; the lasting count
    is ``jobs_settled{outcome="refused"}``.

``ultimat3_jobs_backfill_pending{name}`` (gauge)
    1 while a declared backfill is pending here (declared for this environment, not
    completed: what ``manage.py jobs backfill --pending`` gates on), else 0.
``ultimat3_jobs_backfill_rows{name,state}`` (gauge)
    Rows swept by the backfill's run (its completed one, else its newest), under its state
    (``pending``, ``running``, ``completed``, ``failed``).

A queue is known when it holds a job or a live worker claims from it. The backfill families come
from ``inspect_backfills()``, the one read behind the CLI and the admin's backfills page, which
the metrics view passes in (one more read, only when a backfill is declared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.operator.leases import slots_held
from ultimat3_jobs.types import CounterTotal, JobState, QueueStats, WorkerRecord

EXTRA_MISSING = (
    "The metrics of ultimat3-jobs need the prometheus_client package, which its 'prometheus' "
    "extra installs: pip install 'ultimat3-jobs[prometheus]' (from a checkout: pip install "
    "'/path/to/ultimat3-jobs[prometheus]'), or pip install prometheus-client"
)

try:
    from prometheus_client.exposition import choose_encoder
    from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
    from prometheus_client.registry import Collector, CollectorRegistry
except ImportError as exc:
    raise ImproperlyConfigured(EXTRA_MISSING) from exc

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The content type of the text format 0.0.4, answered unless the scraper asks otherwise."""
PREFIX = "ultimat3_jobs_"


def _gauge(name: str, help_text: str, labels: Sequence[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, help_text, labels=labels)


def families(
    stats: Iterable[QueueStats],
    workers: Iterable[WorkerRecord],
    totals: Iterable[CounterTotal],
    held: Mapping[str, int] | None = None,
) -> list[Metric]:
    """The nine families of one scrape, built from the reads' rows (``held``: concurrency
    slots per job name)."""
    workers = list(workers)
    depth: dict[tuple[str, str], int] = {}
    oldest: dict[str, float] = {}
    demand: dict[str, int] = {}
    for stat in stats:
        depth[(stat.queue, stat.state.value)] = stat.jobs
        if stat.oldest_ready_seconds is not None:
            oldest[stat.queue] = stat.oldest_ready_seconds
        if stat.state is JobState.QUEUED:
            demand[stat.queue] = stat.ready
    serving: dict[str, int] = {}
    for worker in workers:
        for queue in worker.queues:
            serving[queue] = serving.get(queue, 0) + 1
    queues = sorted({queue for queue, _ in depth} | set(serving))

    queue_depth = _gauge(
        "queue_depth",
        "Jobs per queue and state; finished states are counted up to a limit per job name.",
        ["queue", "state"],
    )
    oldest_ready = _gauge(
        "queue_oldest_ready_seconds",
        "Seconds the oldest due job of the queue has waited; 0 when none is due.",
        ["queue"],
    )
    dead_jobs = _gauge("queue_dead_jobs", "Failed jobs kept as dead letters per queue.", ["queue"])
    queue_demand = _gauge(
        "queue_demand",
        "Jobs per queue due now, whether or not a worker runs; 0 while the queue is paused.",
        ["queue"],
    )
    queue_workers = _gauge("queue_workers", "Live workers that claim from the queue.", ["queue"])
    for queue in queues:
        for state in JobState:
            queue_depth.add_metric([queue, state.value], depth.get((queue, state.value), 0))
        oldest_ready.add_metric([queue], oldest.get(queue, 0.0))
        dead_jobs.add_metric([queue], depth.get((queue, JobState.FAILED.value), 0))
        queue_demand.add_metric([queue], demand.get(queue, 0))
        queue_workers.add_metric([queue], serving.get(queue, 0))

    settled = CounterMetricFamily(
        PREFIX + "jobs_settled",
        "Settled attempts per job name and outcome since the counters began.",
        labels=["name", "outcome"],
    )
    for total in totals:
        for outcome, count in total.counts().items():
            settled.add_metric([total.name, outcome], count)
    return [
        queue_depth,
        oldest_ready,
        dead_jobs,
        queue_demand,
        queue_workers,
        settled,
        *_lease_families(workers, held or {}),
    ]


def _lease_families(workers: list[WorkerRecord], held: Mapping[str, int]) -> list[Metric]:
    slots = _gauge("lease_slots_held", "Concurrency slots held now per job name.", ["name"])
    for name in sorted(held):
        slots.add_metric([name], held[name])
    made = []
    for what, help_text in (
        ("shed", "Jobs the live workers shed for a busy limit since they started, per job name."),
        ("refused", "Jobs the live workers refused for a busy key since they started, per name."),
    ):
        total: dict[str, int] = {}
        for worker in workers:
            for name, count in worker.limits.get(what, {}).items():
                total[name] = total.get(name, 0) + count
        gauge = _gauge(f"lease_{what}", help_text, ["name"])
        for name in sorted(total):
            gauge.add_metric([name], total[name])
        made.append(gauge)
    return [slots, *made]


def backfill_families(views: Iterable[Any]) -> list[Metric]:
    """The two backfill families from ``inspect_backfills()``'s views (``name``, ``state``,
    ``pending``, ``run``)."""
    pending = _gauge(
        "backfill_pending",
        "1 while the backfill is declared for this environment and not completed.",
        ["name"],
    )
    rows = _gauge(
        "backfill_rows",
        "Rows swept by the backfill's completed (else newest) run.",
        ["name", "state"],
    )
    for view in views:
        pending.add_metric([view.name], 1 if view.pending else 0)
        rows.add_metric([view.name, view.state], view.run.rows_done if view.run else 0)
    return [pending, rows]


class JobsCollector(Collector):
    """A ``prometheus_client`` collector of the job store's families.

    ``driver`` defaults to the configured one (:func:`~ultimat3_jobs.drivers.get_driver`), looked
    up at each collect. Register it in a registry of your own to serve the jobs' families beside
    your other metrics (the view of this app never does: it serves this collector alone)."""

    def __init__(
        self,
        driver: JobDriver | None = None,
        *,
        backfills: Callable[[], Iterable[Any]] | None = None,
    ) -> None:
        self._driver = driver
        self._backfills = backfills

    def collect(self) -> Iterator[Metric]:
        driver = self._driver or get_driver()
        stats = driver.queue_stats()
        workers = driver.worker_list()
        totals = driver.counter_total()
        held = slots_held(driver.lease_list(kind="concurrency")) if driver.has_lease_store else {}
        found = families(stats, workers, totals, held)
        views = list(self._backfills()) if self._backfills is not None else []
        if views:  # no backfill declared: no backfill family
            found += backfill_families(views)
        return iter(found)

    def describe(self) -> Iterator[Metric]:
        """The families with no sample, so registering the collector reads nothing."""
        return iter(families([], [], []))


def exposition(
    driver: JobDriver,
    *,
    accept: str = "",
    backfills: Callable[[], Iterable[Any]] | None = None,
) -> tuple[bytes, str]:
    """The body and content type of one scrape (four reads of the store, and ``backfills()``
    when given), in the format that ``accept`` (a scraper's ``Accept`` header) asks for:
    OpenMetrics when it names ``application/openmetrics-text``, else the text format 0.0.4."""
    encode, content_type = choose_encoder(accept)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobsCollector(driver, backfills=backfills))
    return encode(registry), content_type


def render(driver: JobDriver) -> str:
    """The text format 0.0.4 of one scrape (four reads of the store)."""
    body, _ = exposition(driver)
    return body.decode()
