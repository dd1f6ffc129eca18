"""The Scheduler in this process, on threads, against PostgreSQL: it fires each occurrence
once, one scheduler leads, a follower takes over, catch-up policies after downtime, new tasks,
pauses, and ``jobs cron``."""

from __future__ import annotations

import io
import json
import time
from datetime import datetime, timedelta

import pytest
from django.core.management import call_command

from tests.scheduler.conftest import (
    EVERY_SECOND,
    FAST_LEASE,
    cron_jobs_count,
    db_now,
    fire_diagnosis,
    fired,
    gaps_and_repeats,
    leader_row,
    make_task,
    occurrences,
    registry_of,
    set_watermark,
    task_row,
)
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.model.cron import idempotency_key
from ultimat3_jobs.model.registry import registry

pytestmark = pytest.mark.django_db(transaction=True)


def wait_fired(name: str, count: int, timeout: float = 15.0) -> list[datetime]:
    return wait_for(
        lambda: (found := occurrences(name)) and len(found) >= count and found,
        timeout=timeout,
        what=f"{count} fires of {name}",
    )


def assert_every_second_once(instants: list[datetime]) -> None:
    missing, repeats = gaps_and_repeats(instants)
    assert repeats == [], f"fired twice: {repeats}"
    assert missing == [], f"never fired: {missing}"


# -- one leader, every second -----------------------------------------------------------------


def test_a_leader_fires_every_second_with_occurrence_keys(make_scheduler):
    started_at = db_now()
    running = make_scheduler("solo")
    assert running.scheduler.leading.wait(10)
    wait_fired(EVERY_SECOND, 4)
    running.stop()

    jobs = fired(EVERY_SECOND)
    assert_every_second_once([job.occurrence for job in jobs])
    for job in jobs:
        assert job.key == f"task:{int(job.occurrence.timestamp())}:{EVERY_SECOND}"
        assert job.key == idempotency_key(EVERY_SECOND, job.occurrence)
        assert job.state == "queued"
        lag = (job.created_at - job.occurrence).total_seconds()
        assert 0 <= lag < 1.0, (job.occurrence, job.created_at)
        assert job.run_at <= job.created_at + timedelta(milliseconds=1)
    # A task the store has never seen starts from now: nothing before the scheduler started.
    assert jobs[0].occurrence > started_at
    state = task_row(EVERY_SECOND)
    assert state.watermark == jobs[-1].occurrence
    assert state.last_fire_at == jobs[-1].occurrence
    assert state.last_job_id == jobs[-1].id
    assert running.scheduler.fire_count == cron_jobs_count(), fire_diagnosis(jobs)
    # The daily Paris task is known too, not due: nothing fired for it.
    assert fired("tests.paris_daily") == []
    assert task_row("tests.paris_daily") is not None


def test_three_schedulers_one_leads(make_scheduler):
    schedulers = [make_scheduler(f"trio-{n}") for n in range(3)]
    wait_for(lambda: any(s.leading for s in schedulers), timeout=10, what="a leader")
    most_leading = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        most_leading = max(most_leading, sum(s.leading for s in schedulers))
        time.sleep(0.02)
    leaders = [s for s in schedulers if s.leading]
    for running in schedulers:
        running.stop()

    assert most_leading == 1
    assert len(leaders) == 1
    (leader,) = leaders
    assert [s.scheduler.fire_count > 0 for s in schedulers] == [s is leader for s in schedulers]
    row = leader_row()
    assert (row.holder, row.epoch) == (leader.id, 1)
    jobs = fired(EVERY_SECOND)
    assert len(jobs) >= 4
    assert len({job.key for job in jobs}) == len(jobs)
    assert_every_second_once([job.occurrence for job in jobs])
    assert leader.scheduler.fire_count == cron_jobs_count(), fire_diagnosis(jobs)


def test_a_graceful_stop_hands_over_without_a_double_or_a_gap(make_scheduler):
    schedulers = [make_scheduler(f"relay-{n}") for n in range(3)]
    leader = wait_for(
        lambda: next((s for s in schedulers if s.leading), None), timeout=10, what="a leader"
    )
    wait_fired(EVERY_SECOND, 3)

    stopped_at = time.monotonic()
    leader.stop()
    before = occurrences(EVERY_SECOND)
    others = [s for s in schedulers if s is not leader]
    successor = wait_for(
        lambda: next((s for s in others if s.leading), None),
        timeout=FAST_LEASE + 5,
        what="a successor",
    )
    handover = time.monotonic() - stopped_at
    wait_fired(EVERY_SECOND, len(before) + 3)
    for running in others:
        running.stop()

    print(f"graceful handover took {handover:.2f}s")
    assert handover <= FAST_LEASE + 2
    row = leader_row()
    assert (row.holder, row.epoch) == (successor.id, 2)
    jobs = fired(EVERY_SECOND)
    assert_every_second_once([job.occurrence for job in jobs])
    assert leader.scheduler.fire_count + successor.scheduler.fire_count == cron_jobs_count(), (
        fire_diagnosis(jobs)
    )
    assert leader.scheduler.fire_count >= 3
    assert successor.scheduler.fire_count >= 3
    state = task_row(EVERY_SECOND)
    assert (state.watermark, state.last_job_id) == (jobs[-1].occurrence, jobs[-1].id)


# -- catch-up after downtime ------------------------------------------------------------------


def once_a_minute_far_from_now() -> tuple[str, datetime]:
    """A six-field cron firing once a minute, at the second half a minute away from now, and
    the store's now: for the next ~25 s the most recent occurrence is ~30 s old (recent under
    the default ``missed_after`` of 60 s) and every earlier one is over 60 s old (missed)."""
    now = db_now()
    return f"* * * * * {(now.second + 30) % 60}", now


@pytest.mark.parametrize(
    ("catch_up", "max_catch_up", "fired_missed"),
    [("skip", 100, 0), ("run-once", 100, 1), ("all", 100, 9), ("all", 3, 3)],
    ids=["skip", "run-once", "all", "all-bounded"],
)
def test_catch_up_after_downtime(make_scheduler, catch_up, max_catch_up, fired_missed):
    cron, now = once_a_minute_far_from_now()
    handle = make_task("tests.sched.catch_up", cron, catch_up=catch_up, max_catch_up=max_catch_up)
    schedule = handle.definition.schedule
    # Ten minutes down: nine occurrences missed, the tenth (~30 s ago) recent.
    down_since = now - timedelta(minutes=10, seconds=5)
    due = schedule.occurrences(down_since, now)
    assert len(due) == 10
    assert (now - due[-2]).total_seconds() > 60 > (now - due[-1]).total_seconds()
    set_watermark(handle.name, down_since)

    running = make_scheduler("catch-up", registry=registry_of(handle))
    wait_for(lambda: task_row(handle.name).watermark == due[-1], timeout=10, what="the catch-up")
    running.stop()

    missed = due[:-1]
    expected = [*missed[len(missed) - fired_missed :], due[-1]]
    assert occurrences(handle.name) == expected
    state = task_row(handle.name)
    assert state.last_fire_at == due[-1]
    assert running.scheduler.fire_count == len(expected)


@pytest.mark.parametrize("catch_up", ["skip", "run-once"])
def test_after_downtime_with_only_missed_occurrences_the_latest_fires(make_scheduler, catch_up):
    """An hourly task, five hours down: every occurrence since was missed. ``skip`` fires the
    latest of them, as ``run-once`` does (until 0.1 ``skip`` fired none, and the task waited
    for its next hour)."""
    now = db_now()
    handle = make_task("tests.sched.hourly", f"{(now.minute + 30) % 60} * * * *", catch_up=catch_up)
    down_since = now - timedelta(hours=5)
    due = handle.definition.schedule.occurrences(down_since, now)
    assert len(due) == 5
    assert (now - due[-1]).total_seconds() > 300

    set_watermark(handle.name, down_since)
    running = make_scheduler("hourly", registry=registry_of(handle))
    wait_for(lambda: task_row(handle.name).watermark == due[-1], timeout=10, what="the catch-up")
    running.stop()

    assert occurrences(handle.name) == [due[-1]]
    state = task_row(handle.name)
    assert state.last_fire_at == due[-1]
    assert running.scheduler.fire_count == 1


def test_a_new_task_starts_from_now_while_a_known_one_catches_up(make_scheduler):
    cron, now = once_a_minute_far_from_now()
    known = make_task("tests.sched.known", cron, catch_up="all")
    new = make_task("tests.sched.new", cron, catch_up="all")
    new_per_second = make_task("tests.sched.new_per_second", "* * * * * *", catch_up="all")
    down_since = now - timedelta(minutes=3, seconds=5)
    set_watermark(known.name, down_since)
    assert task_row(new.name) is None

    running = make_scheduler("newcomer", registry=registry_of(known, new, new_per_second))
    wait_fired(new_per_second.name, 2)
    running.stop()

    assert occurrences(known.name) == known.definition.schedule.occurrences(down_since, now)
    assert len(occurrences(known.name)) == 3
    # The same schedule with catch_up="all", never seen before: no history is replayed.
    assert occurrences(new.name) == []
    assert task_row(new.name).watermark >= now
    assert task_row(new.name).last_fire_at is None
    assert occurrences(new_per_second.name)[0] > now


# -- pause and resume -------------------------------------------------------------------------


def tasks_json() -> dict[str, dict]:
    out = io.StringIO()
    call_command("jobs", "cron", "--json", stdout=out)
    return {row["name"]: row for row in json.loads(out.getvalue())}


def test_a_paused_task_keeps_its_watermark_and_resumes_by_its_policy(make_scheduler, monkeypatch):
    monkeypatch.setattr("ultimat3_jobs.runtime.scheduler.scheduler.PAUSED_RECHECK_SECONDS", 0.3)
    cron, now = once_a_minute_far_from_now()
    handle = make_task("tests.sched.pausable", cron, catch_up="run-once")
    down_since = now - timedelta(minutes=10, seconds=5)
    due = handle.definition.schedule.occurrences(down_since, now)
    set_watermark(handle.name, down_since)
    driver = PostgresDriver()
    assert driver.pause_add(scope="task", target=handle.name, reason="test")
    own = registry_of(handle, registry.get(EVERY_SECOND))

    running = make_scheduler("pauser", registry=own)
    assert running.scheduler.leading.wait(10)
    wait_fired(EVERY_SECOND, 2)  # the scheduler is busy: only the paused task stays quiet
    time.sleep(1.0)
    assert occurrences(handle.name) == []
    state = task_row(handle.name)
    assert (state.watermark, state.last_fire_at) == (down_since, None)

    assert driver.pause_remove(scope="task", target=handle.name)
    wait_for(lambda: task_row(handle.name).watermark == due[-1], timeout=10, what="the resume")
    running.stop()
    # run-once: one job for the nine missed while paused, and the recent occurrence.
    assert occurrences(handle.name) == [due[-2], due[-1]]
    assert task_row(handle.name).last_fire_at == due[-1]


def test_pausing_a_running_task_holds_its_occurrences_until_resumed(make_scheduler, monkeypatch):
    """Paused for a few seconds, under ``missed_after`` (60 s): the held occurrences are late,
    not missed, so the resume fires each of them once."""
    monkeypatch.setattr("ultimat3_jobs.runtime.scheduler.scheduler.PAUSED_RECHECK_SECONDS", 0.3)
    running = make_scheduler("pause-live")
    wait_fired(EVERY_SECOND, 2)
    driver = PostgresDriver()
    assert driver.pause_add(scope="task", target=EVERY_SECOND)
    time.sleep(1.5)  # the next due round reads the pause (one in flight may still fire)
    held = task_row(EVERY_SECOND)
    count = len(occurrences(EVERY_SECOND))
    time.sleep(2.0)
    assert len(occurrences(EVERY_SECOND)) == count
    assert task_row(EVERY_SECOND).watermark == held.watermark
    assert tasks_json()[EVERY_SECOND]["paused"] is True

    assert driver.pause_remove(scope="task", target=EVERY_SECOND)
    resumed_at = db_now()
    wait_for(lambda: task_row(EVERY_SECOND).watermark > resumed_at, timeout=5, what="the resume")
    running.stop()
    instants = occurrences(EVERY_SECOND)
    assert len(instants) >= count + 3
    assert_every_second_once(instants)


# -- jobs cron --json -------------------------------------------------------------------------


def test_jobs_tasks_json_shows_next_fire_last_fire_and_pause(make_scheduler):
    before = tasks_json()
    assert before[EVERY_SECOND]["last_fire"] is None
    assert before[EVERY_SECOND]["paused"] is False

    running = make_scheduler("listed")
    wait_fired(EVERY_SECOND, 2)
    running.stop()
    jobs = fired(EVERY_SECOND)

    rows = tasks_json()
    assert set(rows) == {t.name for t in registry.crons()}
    every = rows[EVERY_SECOND]
    assert (every["cron"], every["tz"], every["catch_up"]) == ("* * * * * *", "UTC", "skip")
    assert datetime.fromisoformat(every["last_fire"]) == jobs[-1].occurrence
    assert every["last_job_id"] == str(jobs[-1].id)
    assert datetime.fromisoformat(every["next_fire"]) > jobs[-1].occurrence
    assert every["paused"] is False
    paris = rows["tests.paris_daily"]
    assert (paris["cron"], paris["tz"], paris["catch_up"]) == (
        "30 2 * * *",
        "Europe/Paris",
        "run-once",
    )
    assert paris["last_fire"] is None
    next_paris = datetime.fromisoformat(paris["next_fire"])
    local = next_paris.astimezone(registry.get("tests.paris_daily").definition.schedule.zone)
    assert (local.hour, local.minute) in {(2, 30), (3, 30)}  # 03:30 on the spring-forward day
    assert timedelta(0) < next_paris - db_now() <= timedelta(days=1, hours=1)

    assert PostgresDriver().pause_add(scope="task", target="tests.paris_daily")
    rows = tasks_json()
    assert rows["tests.paris_daily"]["paused"] is True
    assert rows[EVERY_SECOND]["paused"] is False


def test_jobs_cron_table():
    out = io.StringIO()
    call_command("jobs", "cron", stdout=out)
    lines = out.getvalue().splitlines()
    header = ("NAME", "CRON", "TZ", "CATCH-UP", "NEXT FIRE", "LAST FIRE", "PAUSED")
    assert [cell.strip() for cell in lines[0].split("  ") if cell.strip()] == list(header)
    assert any(line.startswith(EVERY_SECOND) and line.rstrip().endswith("no") for line in lines)


def test_a_long_outage_of_a_per_second_task_is_caught_up(make_scheduler):
    """Three days without a scheduler: 259,200 occurrences of a per-second task. ``skip``
    needs only the last missed one and the recent ones, and the leader must get there within
    its lease; walking every occurrence since the watermark takes longer than that, the lease
    lapses, the fire is fenced, and the next leader starts the same walk again."""
    handle = make_task("tests.sched.long_outage", "* * * * * *", catch_up="skip")
    now = db_now()
    set_watermark(handle.name, now - timedelta(days=3))

    running = make_scheduler("outage", registry=registry_of(handle))
    try:
        wait_for(lambda: task_row(handle.name).watermark > now, timeout=20, what="the catch-up")
    finally:
        running.stop()
    instants = occurrences(handle.name)
    # Only the recent occurrences (within missed_after, 60 s) fired.
    assert 55 <= len([i for i in instants if i <= now]) <= 61
    assert_every_second_once(instants)
