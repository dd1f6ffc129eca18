"""The Prometheus text exposition (format 0.0.4) of queues, workers and settle counters.

Layer L4 (processes). One scrape costs three reads: ``queue_stats``, ``worker_list`` and
``counter_total`` (see their costs on :class:`~ultimat3_jobs.drivers.base.JobDriver`).

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
``ultimat3_jobs_jobs_settled_total{name,outcome}`` (counter)
    Settles per job name since the counters began (``completed``, ``retried``, ``dead``,
    ``dropped``, ``refused``, ``cancelled``): the sum of every counter bucket, minute and hour.
    It falls only if counter rows are deleted, which Prometheus reads as a counter reset.

A queue is known when it holds a job or a live worker claims from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.types import JobState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "ultimat3_jobs_"

Sample = tuple[Mapping[str, str], int | float]


def escape_label_value(value: str) -> str:
    """A label value as the text format writes it: backslash, double quote and line feed
    escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


def _family(name: str, kind: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    full = PREFIX + name
    lines = [f"# HELP {full} {_escape_help(help_text)}", f"# TYPE {full} {kind}"]
    for labels, value in samples:
        rendered = ",".join(
            f'{label}="{escape_label_value(text)}"' for label, text in labels.items()
        )
        lines.append(f"{full}{{{rendered}}} {_number(value)}")
    return lines


def render(driver: JobDriver) -> str:
    """The exposition text of one scrape (three reads of the store)."""
    stats = driver.queue_stats()
    workers = driver.worker_list()
    totals = driver.counter_total()

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

    lines: list[str] = []
    lines += _family(
        "queue_depth",
        "gauge",
        "Jobs per queue and state; finished states are counted up to a limit per job name.",
        (
            ({"queue": queue, "state": state.value}, depth.get((queue, state.value), 0))
            for queue in queues
            for state in JobState
        ),
    )
    lines += _family(
        "queue_oldest_ready_seconds",
        "gauge",
        "Seconds the oldest due job of the queue has waited; 0 when none is due.",
        (({"queue": queue}, oldest.get(queue, 0.0)) for queue in queues),
    )
    lines += _family(
        "queue_dead_jobs",
        "gauge",
        "Failed jobs kept as dead letters per queue.",
        (({"queue": queue}, depth.get((queue, JobState.FAILED.value), 0)) for queue in queues),
    )
    lines += _family(
        "queue_demand",
        "gauge",
        "Jobs per queue due now, whether or not a worker runs; 0 while the queue is paused.",
        (({"queue": queue}, demand.get(queue, 0)) for queue in queues),
    )
    lines += _family(
        "queue_workers",
        "gauge",
        "Live workers that claim from the queue.",
        (({"queue": queue}, serving.get(queue, 0)) for queue in queues),
    )
    lines += _family(
        "jobs_settled_total",
        "counter",
        "Settled attempts per job name and outcome since the counters began.",
        (
            ({"name": total.name, "outcome": outcome}, count)
            for total in totals
            for outcome, count in total.counts().items()
        ),
    )
    return "\n".join(lines) + "\n"
