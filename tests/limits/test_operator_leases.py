"""The operator's view of limits: ``manage.py jobs leases`` lists each held key with its holders,
declared limit and expiry, and ``jobs leases release KEY`` frees a stuck concurrency key (a
malformed or rate key refused with ``X_LEASE_KEY_INVALID``); the admin's queues page shows the
same, with a release button behind ``release_lease``; the metrics give held slots per job name
and the live workers' shed and refused counts."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from tests.admin.conftest import make_user
from tests.limits import jobs
from tests.limits.support import concurrency_rows
from tests.operator.test_metrics import parse, value
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.base import LeaseRequest
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import DriverCapabilityMissing, LeaseKeyInvalid
from ultimat3_jobs.operator import leases
from ultimat3_jobs.operator.metrics import render

KEY = "job-key:tests.limits.per_key_three:k%3A1"
QUEUES_PAGE = "/admin/ultimat3_jobs/job/queues/"


def hold(key: str, limit: int, *, worker_id: str = "w-ops", kind: str = "concurrency") -> Any:
    """A job claimed by ``worker_id`` holding one slot (or stamp) of ``key``."""
    driver = PostgresDriver()
    jobs.per_key_three.using(queue="held").enqueue(key="k:1")
    (claimed,) = driver.job_claim(queues=["held"], limit=1, worker_id=worker_id, lease_seconds=60)
    request = LeaseRequest(key=key, limit=limit, kind=kind, ttl_seconds=60)  # type: ignore[arg-type]
    assert driver.lease_acquire(
        job_id=claimed.id, claim_token=claimed.claim_token, requests=[request]
    ).granted
    return claimed


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("jobs", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


# -- reading a key back ---------------------------------------------------------------------


def test_a_lease_key_reads_back_into_its_parts() -> None:
    parsed = leases.parse_lease_key(KEY)
    assert (parsed.kind, parsed.job, parsed.part) == ("concurrency", jobs.per_key_three.name, "k:1")
    assert leases.declared_limit(parsed) == 3
    fleet = leases.parse_lease_key("job:tests.limits.one_at_a_time")
    assert (fleet.kind, fleet.part, leases.declared_limit(fleet)) == ("concurrency", None, 1)
    rate = leases.parse_lease_key("rate:tests.limits.rated")
    assert (rate.kind, leases.declared_limit(rate)) == ("rate", 20)
    assert leases.declared_limit(leases.parse_lease_key("job:nobody.declares.this")) is None
    # A keyed cap's job named without a key is not that cap.
    assert leases.declared_limit(leases.parse_lease_key("job:tests.limits.per_key")) is None
    assert leases.parse_lease_key("job-key:a%25b:c%253A").part == "c%3A"


@pytest.mark.parametrize(
    ("key", "rule"),
    [
        ("", "length"),
        ("x" * 601, "length"),
        ("job", "shape"),
        ("job:a:b", "shape"),
        ("job-key:a", "shape"),
        ("lock:a", "shape"),
        ("job:", "quoting"),
        ("job-key:a:", "quoting"),
        ("job:a%2", "quoting"),
        ("job-key:a:100%", "quoting"),
    ],
)
def test_a_malformed_key_is_refused_naming_the_rule(key: str, rule: str) -> None:
    with pytest.raises(LeaseKeyInvalid) as caught:
        leases.release(MemoryDriver(), key)
    assert caught.value.code == "X_LEASE_KEY_INVALID"
    assert caught.value.context == {"field": "key", "rule": rule}
    assert "key" in caught.value.message


def test_a_rate_key_is_never_released() -> None:
    with pytest.raises(LeaseKeyInvalid) as caught:
        leases.release(MemoryDriver(), "rate:tests.limits.rated")
    assert caught.value.context["rule"] == "concurrency-key"


def test_a_driver_without_a_lease_store_is_refused_with_its_capability() -> None:
    class NoLeases(MemoryDriver):
        has_lease_store = False

    with pytest.raises(DriverCapabilityMissing):
        leases.release(NoLeases(), "job:a")
    with pytest.raises(DriverCapabilityMissing):
        leases.leases_overview(NoLeases())


# -- manage.py jobs leases ------------------------------------------------------------------


@pytest.mark.django_db
def test_jobs_leases_lists_holders_limit_and_expiry_and_releases_a_key() -> None:
    first = hold(KEY, 3, worker_id="w-one")
    second = hold(KEY, 3, worker_id="w-two")
    hold("rate:tests.limits.rated", 20, kind="rate")
    assert run("leases").count("slot ") == 3
    document = json.loads(run("leases", "--json"))
    assert document["truncated"] is False
    keyed, rated = document["keys"]
    assert (keyed["key"], keyed["kind"], keyed["job"], keyed["part"]) == (
        KEY,
        "concurrency",
        "tests.limits.per_key_three",
        "k:1",
    )
    assert (keyed["held"], keyed["limit"]) == (2, 3)
    assert [(h["slot"], h["job_id"], h["worker_id"]) for h in keyed["holders"]] == [
        (0, str(first.id), "w-one"),
        (1, str(second.id), "w-two"),
    ]
    assert keyed["expires_at"] == min(h["expires_at"] for h in keyed["holders"])
    assert (rated["kind"], rated["limit"], rated["held"]) == ("rate", 20, 1)

    assert "released 2 slots" in run("leases", "release", KEY)
    assert concurrency_rows() == 0
    assert [k["key"] for k in json.loads(run("leases", "--json"))["keys"]] == [
        "rate:tests.limits.rated"
    ]
    with pytest.raises(CommandError, match="X_LEASE_KEY_INVALID"):
        run("leases", "release", "job:not:a:key")
    with pytest.raises(CommandError, match="X_LEASE_KEY_INVALID"):
        run("leases", "release", "rate:tests.limits.rated")
    with pytest.raises(CommandError, match="needs a KEY"):
        run("leases", "release")


@pytest.mark.django_db
def test_jobs_leases_says_when_nothing_is_held() -> None:
    assert run("leases").strip() == "no lease is held"


# -- the admin's queues page ----------------------------------------------------------------


def client_for(name: str, perms: list[str]) -> Client:
    client = Client()
    client.force_login(make_user(name, staff=True, perms=perms))
    return client


@pytest.mark.django_db
def test_the_queues_page_shows_held_slots_with_limit_and_a_release_behind_its_permission() -> None:
    holder = hold(KEY, 3, worker_id="w-page")
    viewer = client_for("viewer", ["view_job"])
    html = viewer.get(QUEUES_PAGE).content.decode()
    assert f'data-lease-key="{KEY}"' in html
    assert "<td data-held>1</td><td data-limit>3</td>" in html
    assert str(holder.id) in html and "w-page" in html
    assert 'value="release"' not in html  # no button without the permission
    # The server refuses whatever the page showed.
    assert viewer.post(QUEUES_PAGE, {"op": "release", "key": KEY}).status_code == 403
    assert concurrency_rows() == 1

    releaser = client_for("releaser", ["release_lease"])
    page = releaser.get(QUEUES_PAGE).content.decode()
    assert 'value="release"' in page
    refused = releaser.post(QUEUES_PAGE, {"op": "release", "key": "job:a:b"}, follow=True)
    assert "X_LEASE_KEY_INVALID" in refused.content.decode()
    assert concurrency_rows() == 1
    done = releaser.post(QUEUES_PAGE, {"op": "release", "key": KEY}, follow=True)
    assert "Released 1 slot of" in done.content.decode()
    assert concurrency_rows() == 0


# -- the metrics ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_metrics_give_held_slots_per_job_name_and_the_workers_sheds_and_refusals() -> None:
    driver = PostgresDriver()
    hold(KEY, 3)
    hold("job-key:tests.limits.per_key_three:other", 3)
    hold("job:tests.limits.one_at_a_time", 1)
    hold("rate:tests.limits.rated", 20, kind="rate")  # a stamp holds no slot
    for worker_id, shed in (("w-a", 2), ("w-b", 5)):
        driver.worker_heartbeat(
            worker_id=worker_id,
            host="h",
            pid=1,
            queues=["default"],
            slots=1,
            ttl_seconds=60,
            limits={"shed": {"tests.limits.per_key": shed}, "refused": {"tests.limits.x": 1}},
        )
    _, series = parse(render(driver))
    assert value(series, "lease_slots_held", name="tests.limits.per_key_three") == 2
    assert value(series, "lease_slots_held", name="tests.limits.one_at_a_time") == 1
    assert value(series, "lease_shed", name="tests.limits.per_key") == 7
    assert value(series, "lease_refused", name="tests.limits.x") == 2
    assert not [
        key
        for key in series
        if key[0].startswith("ultimat3_jobs_lease_slots_held")
        and dict(key[1]).get("name") == "tests.limits.rated"
    ]


def test_a_workers_sheds_reach_its_registry_row(make_worker) -> None:
    holder = hold("job-key:tests.limits.per_key:busy", 1)
    waiting = jobs.per_key.enqueue(key="busy")
    running = make_worker(queues=("default",))
    driver = PostgresDriver()

    def shed_reported() -> bool:
        rows = [w for w in driver.worker_list() if w.id == running.worker.config.worker_id]
        return bool(rows) and rows[0].limits.get("shed", {}).get(jobs.per_key.name, 0) >= 1

    wait_for(shed_reported, timeout=60, what="the worker's row reports its shed")
    assert holder.id != waiting.id
