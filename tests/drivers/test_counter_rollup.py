"""counter_rollup: minute rows whose hour is old enough fold into hour rows, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.drivers.support import RedisControls
from tests.factories import JobCounterFactory
from ultimat3_jobs.drivers.memory import MemoryDriver
from ultimat3_jobs.types import COUNTER_OUTCOMES


def put_minute(driver, name: str, bucket: datetime, **counts: int) -> None:
    values = {field: counts.get(field, 0) for field in COUNTER_OUTCOMES}
    if isinstance(driver, MemoryDriver):
        with driver._lock:  # test support: a past minute the settles of this test cannot make
            driver._counters[(name, "minute", bucket)] = values
    elif driver.name == "redis":
        RedisControls(driver).put_counter(name, "minute", bucket, **values)
    else:
        JobCounterFactory(name=name, bucket=bucket, **values)


def rows(driver, since: datetime, period: str):
    return {(r.name, r.bucket): r for r in driver.counter_read(since=since, period=period)}


def test_counter_rollup_folds_old_minutes_into_their_hour_once(driver) -> None:
    hour = (datetime.now(UTC) - timedelta(hours=5)).replace(minute=0, second=0, microsecond=0)
    recent = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    put_minute(driver, "a", hour + timedelta(minutes=1), completed=2, dead=1)
    put_minute(driver, "a", hour + timedelta(minutes=59), completed=3)
    put_minute(driver, "b", hour + timedelta(minutes=7), retried=4)
    put_minute(driver, "a", recent, completed=9)
    totals_before = {t.name: t for t in driver.counter_total()}

    assert driver.counter_rollup(keep_seconds=3600) == 3
    hours = rows(driver, hour - timedelta(hours=1), "hour")
    assert (hours[("a", hour)].completed, hours[("a", hour)].dead) == (5, 1)
    assert hours[("b", hour)].retried == 4
    minutes = rows(driver, hour - timedelta(hours=1), "minute")
    assert list(minutes) == [("a", recent)], "recent minutes stay minutes"
    assert driver.counter_rollup(keep_seconds=3600) == 0, "each row folds once"
    totals_after = {t.name: t for t in driver.counter_total()}
    assert totals_after["a"].completed == totals_before["a"].completed == 14
    assert totals_after["b"].retried == totals_before["b"].retried == 4


def test_rolled_up_hour_rows_go_by_the_purges_cutoff(driver) -> None:
    hour = (datetime.now(UTC) - timedelta(hours=5)).replace(minute=0, second=0, microsecond=0)
    recent = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    put_minute(driver, "a", hour + timedelta(minutes=1), completed=2)
    put_minute(driver, "b", hour + timedelta(minutes=7), retried=4)
    put_minute(driver, "a", recent, completed=9)
    assert driver.counter_rollup(keep_seconds=3600) == 2
    assert driver.counter_count(before=hour, limit=10) == 0, "a bucket is old from its start"
    cutoff = hour + timedelta(seconds=1)
    assert driver.counter_count(before=cutoff, limit=10) == 2
    assert driver.counter_purge(before=cutoff, limit=1) == 1
    assert driver.counter_purge(before=cutoff, limit=10) == 1
    assert driver.counter_purge(before=cutoff, limit=10) == 0
    assert rows(driver, hour - timedelta(hours=1), "hour") == {}
    assert list(rows(driver, hour - timedelta(hours=1), "minute")) == [("a", recent)]
