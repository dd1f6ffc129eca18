"""The metrics through ``prometheus_client``: OpenMetrics when the scraper asks for it, the text
format 0.0.4 otherwise, a collector users can register beside their own metrics, never the
library's global registry, and a clear message when the ``prometheus`` extra is missing."""

from __future__ import annotations

import importlib
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse
from prometheus_client import REGISTRY, CollectorRegistry, Counter, generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from tests.drivers.support import enqueue, put_in_state
from tests.operator.test_metrics import parse, reads, value
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.factories.backfill import declared_backfills
from ultimat3_jobs.operator.metrics import TEXT_CONTENT_TYPE, JobsCollector

OPENMETRICS = "application/openmetrics-text"
# What Prometheus 2.x sends when it scrapes (scrape_protocols left at their default).
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
FAMILIES = {
    "ultimat3_jobs_queue_depth": "gauge",
    "ultimat3_jobs_queue_oldest_ready_seconds": "gauge",
    "ultimat3_jobs_queue_dead_jobs": "gauge",
    "ultimat3_jobs_queue_demand": "gauge",
    "ultimat3_jobs_queue_workers": "gauge",
    "ultimat3_jobs_jobs_settled": "counter",
    "ultimat3_jobs_lease_slots_held": "gauge",
    "ultimat3_jobs_lease_shed": "gauge",
    "ultimat3_jobs_lease_refused": "gauge",
}


def populate() -> PostgresDriver:
    driver = PostgresDriver()
    job_id = enqueue(driver)
    put_in_state(driver, job_id, "failed")
    enqueue(driver, queue="math", name="tests.add")
    driver.worker_heartbeat(
        worker_id="w", host="h", pid=1, queues=["default"], slots=1, ttl_seconds=60
    )
    return driver


def openmetrics_series(text: str) -> tuple[dict[str, str], dict[tuple[str, tuple], float]]:
    """The families' types and the series of an OpenMetrics exposition, read by the OpenMetrics
    parser of ``prometheus_client`` (which refuses a text without its ``# EOF``)."""
    types: dict[str, str] = {}
    series: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            series[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return types, series


@pytest.mark.django_db
@pytest.mark.urls("tests.operator.urls")
@pytest.mark.parametrize("accept", [OPENMETRICS, PROMETHEUS_ACCEPT])
def test_the_view_answers_openmetrics_when_asked_in_four_queries(
    client, django_assert_max_num_queries, accept
):
    populate()
    with django_assert_max_num_queries(reads()):
        response = client.get(reverse("ultimat3_jobs:metrics"), headers={"Accept": accept})
    assert response.status_code == 200
    assert response["Content-Type"].startswith(f"{OPENMETRICS}; version=1.0.0; charset=utf-8")
    assert "Accept" in response["Vary"]
    text = response.content.decode()
    assert text.endswith("# EOF\n")
    types, series = openmetrics_series(text)
    backfills = {"ultimat3_jobs_backfill_pending": "gauge", "ultimat3_jobs_backfill_rows": "gauge"}
    assert types == FAMILIES | (backfills if declared_backfills() else {})
    assert series[("ultimat3_jobs_queue_dead_jobs", (("queue", "default"),))] == 1
    assert series[("ultimat3_jobs_queue_workers", (("queue", "default"),))] == 1
    depth = ("ultimat3_jobs_queue_depth", (("queue", "math"), ("state", "queued")))
    assert series[depth] == 1
    settled = ("ultimat3_jobs_jobs_settled_total", (("name", "tests.echo"), ("outcome", "dead")))
    assert series[settled] == 1


@pytest.mark.django_db
@pytest.mark.urls("tests.operator.urls")
@pytest.mark.parametrize("accept", [None, "text/plain", "text/plain;version=0.0.4", "*/*"])
def test_the_view_answers_the_text_format_otherwise(client, accept):
    populate()
    headers = {"Accept": accept} if accept is not None else {}
    response = client.get(reverse("ultimat3_jobs:metrics"), headers=headers)
    assert response["Content-Type"] == TEXT_CONTENT_TYPE
    text = response.content.decode()
    assert "# EOF" not in text
    types, series = parse(text)
    assert types["ultimat3_jobs_jobs_settled_total"] == "counter"
    assert value(series, "queue_dead_jobs", queue="default") == 1


@pytest.mark.django_db
@pytest.mark.urls("tests.operator.urls")
def test_the_view_leaves_out_the_metrics_of_the_global_registry(client):
    """The view serves its own collector alone: a metric the project registers in
    ``prometheus_client``'s global registry stays out of it."""
    counter = Counter("project_orders", "Orders of the project.")
    try:
        counter.inc()
        assert b"project_orders_total" in generate_latest(REGISTRY)
        response = client.get(reverse("ultimat3_jobs:metrics"))
    finally:
        REGISTRY.unregister(counter)
    assert b"project_orders" not in response.content
    assert b"ultimat3_jobs_queue_depth" in response.content


@pytest.mark.django_db
def test_a_project_serves_the_collector_beside_its_own_metrics(django_assert_num_queries):
    """Registering reads nothing (``describe`` answers the families with no sample); each
    collect reads the store in four queries (the fourth: held lease slots)."""
    populate()
    registry = CollectorRegistry()
    Counter("project_orders", "Orders of the project.", registry=registry).inc(2)
    with django_assert_num_queries(0):
        registry.register(JobsCollector())
    with django_assert_num_queries(4):
        text = generate_latest(registry).decode()
    types, series = parse(text)
    assert types["project_orders_total"] == "counter"
    assert types["ultimat3_jobs_jobs_settled_total"] == "counter"
    assert {name for name, kind in FAMILIES.items() if kind == "gauge"} <= set(types)
    assert value(series, "queue_depth", queue="math", state="queued") == 1
    assert series[("project_orders_total", ())] == 2


def test_the_collector_refuses_a_clash_with_a_family_of_the_registry():
    registry = CollectorRegistry()
    Counter("ultimat3_jobs_jobs_settled", "A clash.", registry=registry)
    with pytest.raises(ValueError, match="ultimat3_jobs_jobs_settled"):
        registry.register(JobsCollector())


def test_without_the_extra_the_urls_name_the_extra(monkeypatch):
    """With ``prometheus_client`` not importable, including ``ultimat3_jobs.urls`` fails with a
    message that says what to install."""
    for name in [name for name in sys.modules if name.partition(".")[0] == "prometheus_client"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    for name in ("ultimat3_jobs.urls", "ultimat3_jobs.views", "ultimat3_jobs.operator.metrics"):
        monkeypatch.delitem(sys.modules, name, raising=False)
        # ``from ultimat3_jobs import views`` would find the module as an attribute of the package.
        monkeypatch.delattr(name, raising=False)
    with pytest.raises(ImproperlyConfigured, match=r"pip install 'ultimat3-jobs\[prometheus\]'"):
        importlib.import_module("ultimat3_jobs.urls")
