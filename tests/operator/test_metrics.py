"""The Prometheus text exposition: it parses line by line, its values match the store, label
values are escaped, and one scrape costs at most four queries (queue stats, workers, counters
and, since limits, the held lease slots: the shed and refused counts ride on the workers'
rows, so the lease families cost one read)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from tests.drivers.support import claim_one, enqueue, put_in_state
from tests.factories import JobCounterFactory
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.factories.backfill import declared_backfills
from ultimat3_jobs.operator.metrics import TEXT_CONTENT_TYPE, render
from ultimat3_jobs.types import AckItem, JobState

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
HELP = re.compile(rf"^# HELP ({NAME}) (.*)$")
TYPE = re.compile(rf"^# TYPE ({NAME}) (counter|gauge|histogram|summary|untyped)$")
SAMPLE = re.compile(rf"^({NAME})(?:\{{(.*)\}})? (\S+)$")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
STATES = [state.value for state in JobState]

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_labels(text: str) -> dict[str, str]:
    """``a="x",b="y\\"z"`` as a dict, unescaping ``\\\\``, ``\\"`` and ``\\n``."""
    labels: dict[str, str] = {}
    position = 0
    while position < len(text):
        name = LABEL_NAME.match(text, position)
        assert name, f"no label name at {text[position:]!r}"
        position = name.end()
        assert text[position : position + 2] == '="', text[position:]
        position += 2
        value: list[str] = []
        while text[position] != '"':
            char = text[position]
            if char == "\\":
                escaped = text[position + 1]
                assert escaped in '\\"n', f"bad escape \\{escaped}"
                value.append("\n" if escaped == "n" else escaped)
                position += 2
            else:
                assert char != "\n"
                value.append(char)
                position += 1
        position += 1
        assert name.group() not in labels
        labels[name.group()] = "".join(value)
        if position < len(text):
            assert text[position] == ",", text[position:]
            position += 1
    return labels


def parse(exposition: str) -> tuple[dict[str, str], Series]:
    """Every line checked against the text format; answers the families' types and the
    series."""
    assert exposition.endswith("\n")
    types: dict[str, str] = {}
    helps: set[str] = set()
    series: Series = {}
    for line in exposition.splitlines():
        if match := HELP.match(line):
            assert match.group(1) not in helps
            helps.add(match.group(1))
        elif match := TYPE.match(line):
            assert match.group(1) not in types, "a family is declared once"
            types[match.group(1)] = match.group(2)
        else:
            match = SAMPLE.match(line)
            assert match, f"not a sample line: {line!r}"
            name, labels, value = match.groups()
            assert name in types, f"{name} has no TYPE line before its samples"
            key = (name, tuple(sorted(parse_labels(labels or "").items())))
            assert key not in series, f"duplicate series {key}"
            number = float(value)
            assert math.isfinite(number)
            series[key] = number
    assert set(types) == helps
    return types, series


def value(series: Series, family: str, **labels: str) -> float:
    return series[("ultimat3_jobs_" + family, tuple(sorted(labels.items())))]


def in_state(driver: JobDriver, state: str, **overrides):
    job_id = enqueue(driver, **overrides)
    put_in_state(driver, job_id, state)
    return job_id


@pytest.fixture
def populated(driver: JobDriver, store) -> Iterator[JobDriver]:
    """default: 2 queued (1 due an hour ago, 1 in the future), 1 running, 1 completed, 2 failed,
    1 cancelled; math: 1 failed (tests.add) and 1 queued; workers: two on default, one draining
    on math."""
    in_state(driver, "running")
    in_state(driver, "completed")
    in_state(driver, "failed")
    in_state(driver, "failed")
    in_state(driver, "cancelled")
    due = enqueue(driver)
    store.make_due(due)
    later = enqueue(driver)
    store.make_future(later, 600)
    in_state(driver, "failed", name="tests.add", queue="math")
    enqueue(driver, name="tests.add", queue="math")
    for worker_id in ("w-a", "w-b"):
        driver.worker_heartbeat(
            worker_id=worker_id, host="h", pid=1, queues=["default"], slots=4, ttl_seconds=60
        )
    driver.worker_heartbeat(
        worker_id="w-c",
        host="h",
        pid=2,
        queues=["math", "emails"],
        slots=2,
        ttl_seconds=60,
        draining=True,
    )
    yield driver


def reads() -> int:
    """Four reads (queue stats, workers, counter totals, held lease slots), and the backfill
    ledger's when this run's modules declared a backfill."""
    return 4 + (1 if declared_backfills() else 0)


def test_empty_store_exposes_the_families_and_no_series(driver):
    types, series = parse(render(driver))
    assert types == {
        "ultimat3_jobs_queue_depth": "gauge",
        "ultimat3_jobs_queue_oldest_ready_seconds": "gauge",
        "ultimat3_jobs_queue_dead_jobs": "gauge",
        "ultimat3_jobs_queue_demand": "gauge",
        "ultimat3_jobs_queue_workers": "gauge",
        "ultimat3_jobs_jobs_settled_total": "counter",
        "ultimat3_jobs_lease_slots_held": "gauge",
        "ultimat3_jobs_lease_shed": "gauge",
        "ultimat3_jobs_lease_refused": "gauge",
    }
    assert series == {}


def test_values_match_the_store(populated):
    driver = populated
    _, series = parse(render(driver))
    depth = {
        (queue, state): value(series, "queue_depth", queue=queue, state=state)
        for queue in ("default", "math", "emails")
        for state in STATES
    }
    assert {key: count for key, count in depth.items() if count} == {
        ("default", "queued"): 2,
        ("default", "running"): 1,
        ("default", "completed"): 1,
        ("default", "failed"): 2,
        ("default", "cancelled"): 1,
        ("math", "queued"): 1,
        ("math", "failed"): 1,
    }
    # Every state of every known queue is there, a worker's queue with no job included.
    queues = {labels[0][1] for name, labels in series if name.endswith("queue_depth")}
    assert queues == {"default", "math", "emails"}
    assert value(series, "queue_dead_jobs", queue="default") == 2
    assert value(series, "queue_dead_jobs", queue="emails") == 0
    assert value(series, "queue_oldest_ready_seconds", queue="default") == pytest.approx(
        3600, abs=60
    )
    assert value(series, "queue_oldest_ready_seconds", queue="math") == pytest.approx(0, abs=30)
    assert value(series, "queue_oldest_ready_seconds", queue="emails") == 0
    # The due jobs as the store counts them: one on default (the future one is not due), not
    # once per worker; math's job counts though its only worker drains.
    assert value(series, "queue_demand", queue="default") == 1
    assert value(series, "queue_demand", queue="math") == 1
    assert value(series, "queue_demand", queue="emails") == 0
    assert value(series, "queue_workers", queue="default") == 2
    assert value(series, "queue_workers", queue="math") == 1
    settled = {
        (dict(labels)["name"], dict(labels)["outcome"]): count
        for (name, labels), count in series.items()
        if name == "ultimat3_jobs_jobs_settled_total"
    }
    assert {key: count for key, count in settled.items() if count} == {
        ("tests.echo", "completed"): 1,
        ("tests.echo", "dead"): 2,
        ("tests.echo", "cancelled"): 1,
        ("tests.add", "dead"): 1,
    }
    assert len(settled) == 12  # every outcome of every name, zeros included


def test_settled_total_only_grows_as_jobs_settle(driver):
    job_id = enqueue(driver)
    _, before = parse(render(driver))
    assert (
        "ultimat3_jobs_jobs_settled_total",
        (("name", "tests.echo"), ("outcome", "completed")),
    ) not in before
    job = claim_one(driver)
    driver.job_ack_many(items=[AckItem(job_id=job_id, claim_token=job.claim_token)])
    _, after = parse(render(driver))
    assert value(after, "jobs_settled_total", name="tests.echo", outcome="completed") == 1


# Label values with what the text format escapes (a backslash, a double quote, a line feed), a
# backslash before an "n", and non-ASCII text.
ODD_NAMES = ['odd"name\\with\nnewline', 'x"y', "x\\y", "x\ny", "end\\", "\\n literal", "ünï ☃"]


@pytest.mark.django_db
@pytest.mark.parametrize("weird", ODD_NAMES)
def test_a_counter_name_with_quotes_backslashes_and_newlines_round_trips(weird):
    from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

    JobCounterFactory(name=weird, bucket=datetime(2026, 1, 1, tzinfo=UTC), completed=5)
    _, series = parse(render(PostgresDriver()))
    assert value(series, "jobs_settled_total", name=weird, outcome="completed") == 5


@pytest.mark.django_db
@pytest.mark.urls("tests.operator.urls")
def test_the_view_serves_the_exposition_in_four_queries(client, django_assert_max_num_queries):
    from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

    driver = PostgresDriver()
    in_state(driver, "failed")
    enqueue(driver, queue="math", name="tests.add")
    driver.worker_heartbeat(
        worker_id="w", host="h", pid=1, queues=["default"], slots=1, ttl_seconds=60
    )
    url = reverse("ultimat3_jobs:metrics")
    assert url == "/ops/jobs/metrics"
    with django_assert_max_num_queries(reads()):
        response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Type"] == TEXT_CONTENT_TYPE
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    _, series = parse(response.content.decode())
    assert value(series, "queue_dead_jobs", queue="default") == 1
    assert value(series, "queue_depth", queue="math", state="queued") == 1
    assert value(series, "queue_workers", queue="default") == 1
    assert client.post(url).status_code == 405


@pytest.mark.django_db
@pytest.mark.urls("tests.operator.urls")
def test_the_scrape_cost_does_not_grow_with_the_number_of_queues_or_names(
    client, django_assert_max_num_queries
):
    from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

    driver = PostgresDriver()
    for n in range(12):
        in_state(driver, "completed", queue=f"q{n}", name=f"tests.n{n}")
        driver.worker_heartbeat(
            worker_id=f"w{n}", host="h", pid=n, queues=[f"q{n}"], slots=1, ttl_seconds=60
        )
    with django_assert_max_num_queries(reads()):
        response = client.get(reverse("ultimat3_jobs:metrics"))
    _, series = parse(response.content.decode())
    assert value(series, "queue_depth", queue="q11", state="completed") == 1
    assert value(series, "jobs_settled_total", name="tests.n11", outcome="completed") == 1


def test_demand_of_a_backlog_with_no_worker(driver, store):
    """An autoscaler scales a queue up from zero workers: with no worker registered, a backlog
    reads as demand, from the driver's ``queue_demand`` and from the metrics; a paused queue
    has none."""
    for _ in range(3):
        store.make_due(enqueue(driver, queue="emails"))
    store.make_future(enqueue(driver, queue="emails"), 600)
    enqueue(driver, queue="math", name="tests.add")
    assert driver.worker_list() == []

    assert driver.queue_demand(queues=["emails", "math"]) == {"emails": 3, "math": 1}
    _, series = parse(render(driver))
    assert value(series, "queue_demand", queue="emails") == 3
    assert value(series, "queue_demand", queue="math") == 1
    assert value(series, "queue_workers", queue="emails") == 0

    driver.queue_pause(queue="math")
    assert driver.queue_demand(queues=["emails", "math"]) == {"emails": 3, "math": 0}
    _, series = parse(render(driver))
    assert value(series, "queue_demand", queue="emails") == 3
    assert value(series, "queue_demand", queue="math") == 0


@pytest.mark.django_db
@pytest.mark.urls("tests.operator.urls")
def test_the_view_reports_the_demand_of_a_backlog_with_no_worker(client):
    from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

    driver = PostgresDriver()
    for _ in range(2):
        enqueue(driver, queue="emails")
    assert driver.worker_list() == []
    response = client.get(reverse("ultimat3_jobs:metrics"))
    assert response.status_code == 200
    _, series = parse(response.content.decode())
    assert value(series, "queue_demand", queue="emails") == 2
