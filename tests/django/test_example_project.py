"""The example project shows a newcomer the metrics view and a cron task at work.

It runs in a subprocess under its own settings (``example_project.settings``), on this test
run's database, so that its jobs and URLs stay out of the test project's registry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json
import django

django.setup()

from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from ultimat3_jobs.models import Job
from ultimat3_jobs.model.registry import registry

tasks = {d.name: (d.schedule.cron, d.schedule.tz) for d in registry.crons()}
client = Client(HTTP_HOST="127.0.0.1")
metrics = client.get(reverse("ultimat3_jobs:metrics"))
page = client.get("/")

from example_project.demo.jobs import queue_report

job_id = queue_report.enqueue().id
call_command("jobs_worker", "--burst", "--queues", "default", "--concurrency", "1")
job = Job.objects.get(id=job_id)
print(json.dumps({
    "tasks": tasks,
    "metrics_url": reverse("ultimat3_jobs:metrics"),
    "metrics_status": metrics.status_code,
    "metrics_type": metrics["Content-Type"],
    "metrics_body": metrics.content.decode(),
    "page_status": page.status_code,
    "page_body": page.content.decode(),
    "job": [job.state, job.result],
}))
"""


def database_url(s: dict | None = None) -> str:
    """This run's database as a URL. A Unix socket directory (the embedded server that
    ``scripts/test`` starts when no PostgreSQL answers on 127.0.0.1) goes in the ``host=``
    query parameter: put in the authority part, it would be read as the database's path."""
    s = connection.settings_dict if s is None else s
    host, port = s["HOST"] or "127.0.0.1", str(s["PORT"] or "")
    user = f"{quote(s['USER'] or '', safe='')}:{quote(s['PASSWORD'] or '', safe='')}"
    if host.startswith("/"):
        query = urlencode({"host": host, **({"port": port} if port else {})})
        return f"postgres://{user}@/{s['NAME']}?{query}"
    return f"postgres://{user}@{host}{':' + port if port else ''}/{s['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_the_demo_serves_metrics_and_runs_its_cron_task() -> None:
    env = dict(os.environ)
    env.update(DJANGO_SETTINGS_MODULE="example_project.settings", DATABASE_URL=database_url())
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert seen["tasks"] == {
        "example_project.demo.jobs.queue_report": ["* * * * *", "UTC"],
        # The default purge, declared by ultimat3_jobs itself (PURGE_CRON).
        "ultimat3_jobs.purge": ["*/15 * * * *", "UTC"],
    }

    assert seen["metrics_url"] == "/jobs/metrics"
    assert seen["metrics_status"] == 200
    assert seen["metrics_type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE ultimat3_jobs_queue_demand gauge" in seen["metrics_body"]

    assert seen["page_status"] == 200
    assert 'href="/jobs/metrics"' in seen["page_body"]
    assert "queue_report" in seen["page_body"]

    # The task's body ran on the worker and stored what it counted (itself was running).
    assert seen["job"] == ["completed", {}]


@pytest.mark.parametrize(
    ("host", "port"), [("", ""), ("127.0.0.1", "5432"), ("/srv/pg socket", "5433"), ("/run/pg", "")]
)
def test_the_probes_database_url_names_this_runs_server(host: str, port: str) -> None:
    from example_project.dburl import database_from_url

    given = {"HOST": host, "PORT": port, "USER": "postgres", "PASSWORD": "p@ss:w", "NAME": "test_x"}
    parsed = database_from_url(database_url(given))
    assert (parsed["HOST"], str(parsed["PORT"] or ""), parsed["NAME"]) == (
        host or "127.0.0.1",
        port,
        "test_x",
    )
    assert (parsed["USER"], parsed["PASSWORD"]) == ("postgres", "p@ss:w")
