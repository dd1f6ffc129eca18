"""Schedules on their own: declaration checks, occurrences across real DST transitions, and the
catch-up plan. No database."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ultimat3_jobs import cron as cron_job
from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.model.cron import MAX_CATCH_UP_LIMIT, Schedule, idempotency_key
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.runtime.scheduler.scheduler import plan


@pytest.fixture(autouse=True)
def _isolated_registry() -> Iterator[None]:
    saved = dict(registry._handles)
    yield
    registry._handles.clear()
    registry._handles.update(saved)


def _body(ctx: Any) -> None:
    """A cron body at module level."""


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def hm(instants: list[datetime]) -> list[str]:
    return [i.strftime("%m-%d %H:%M") for i in instants]


# -- declaration checks -----------------------------------------------------------------------


def refused(**options: Any) -> str:
    """Declare ``tests.sched.bad`` with these options; answer the refusal's message."""
    options.setdefault("name", "tests.sched.bad")
    options.setdefault("tenant", "none")
    with pytest.raises(JobDeclarationInvalid) as caught:
        cron_job(**options)(_body)
    assert options["name"] not in registry
    return caught.value.message


@pytest.mark.parametrize(
    "cron",
    ["61 * * * *", "* * *", "every day", "0 3 * * * 61", "0 25 * * *", ""],
    ids=["minute-61", "three-fields", "words", "second-61", "hour-25", "empty"],
)
def test_a_bad_cron_is_refused_naming_the_task_and_the_expression(cron: str) -> None:
    message = refused(cron=cron, tz="UTC")
    assert "'tests.sched.bad'" in message
    assert f"cron {cron!r}" in message
    assert "not a valid cron expression" in message


def test_a_cron_that_never_fires_is_refused() -> None:
    """February 30th never comes: accepting it would fail every scheduler that syncs the task
    (``next_after`` raises CroniterBadDateError)."""
    message = refused(cron="0 0 30 2 *", tz="UTC")
    assert "'tests.sched.bad'" in message
    assert "'0 0 30 2 *'" in message


@pytest.mark.parametrize("tz", ["Mars/Olympus_Mons", "Europe/Pariss", "../etc/passwd"])
def test_an_unknown_tz_is_refused_naming_the_task_and_the_zone(tz: str) -> None:
    message = refused(cron="0 3 * * *", tz=tz)
    assert "'tests.sched.bad'" in message
    assert f"tz {tz!r} is not a known time zone" in message


@pytest.mark.parametrize("tz", ["", None, 1], ids=["empty", "none", "int"])
def test_a_tz_that_is_not_a_name_is_refused(tz: Any) -> None:
    message = refused(cron="0 3 * * *", tz=tz)
    assert "'tests.sched.bad'" in message
    assert "tz must be an IANA time zone name" in message
    assert repr(tz) in message


@pytest.mark.parametrize(
    ("given", "missing"),
    [({"cron": "0 3 * * *"}, "tz"), ({"tz": "UTC"}, "cron"), ({}, "cron and tz")],
    ids=["no-tz", "no-cron", "neither"],
)
def test_cron_and_tz_are_required(given: dict[str, str], missing: str) -> None:
    message = refused(**given)
    assert "'tests.sched.bad'" in message
    assert f"{missing} required" in message


def test_a_missing_tz_names_the_function_when_no_name_is_given() -> None:
    """The usual form, ``@cron(cron=...)`` over a function, has no ``name=``: the refusal must
    still say which task it is (the default name, ``module.qualname``)."""
    with pytest.raises(JobDeclarationInvalid) as caught:

        @cron_job(cron="0 3 * * *", tenant="none")
        def nightly_without_tz(ctx: Any) -> None: ...

    assert "nightly_without_tz" in caught.value.message


@pytest.mark.parametrize("catch_up", ["sometimes", "RUN-ONCE", "run_once", None])
def test_a_bad_catch_up_is_refused(catch_up: Any) -> None:
    message = refused(cron="0 3 * * *", tz="UTC", catch_up=catch_up)
    assert "'tests.sched.bad'" in message
    assert "catch_up must be one of skip, run-once, all" in message
    assert repr(catch_up) in message


@pytest.mark.parametrize("limit", [0, -1, MAX_CATCH_UP_LIMIT + 1, 1.5, True, "10"], ids=repr)
def test_max_catch_up_out_of_range_is_refused(limit: Any) -> None:
    message = refused(cron="0 3 * * *", tz="UTC", catch_up="all", max_catch_up=limit)
    assert "'tests.sched.bad'" in message
    assert f"max_catch_up must be an integer from 1 to {MAX_CATCH_UP_LIMIT}" in message
    assert repr(limit) in message


@pytest.mark.parametrize(
    "options",
    [
        {"cron": "0 3 * * *", "tz": ""},
        {"cron": "0 3 * * *", "tz": "Mars/Olympus_Mons"},
        {"cron": "61 * * * *", "tz": "UTC"},
        {"cron": "0 0 30 2 *", "tz": "UTC"},
        {"cron": "0 3 * * *", "tz": "UTC", "catch_up": "sometimes"},
        {"cron": "0 3 * * *", "tz": "UTC", "catch_up": "all", "max_catch_up": 0},
        {"tz": "UTC"},
    ],
    ids=["tz-empty", "tz-unknown", "cron-invalid", "never-fires", "catch-up", "max", "required"],
)
def test_every_schedule_refusal_names_the_cron_as_a_cron(options: dict[str, Any]) -> None:
    """One word per meaning: a schedule's refusal opens with ``cron '<name>':``, as the missing
    field's does and as the cron guide shows ("task" is kept for ``django.tasks``)."""
    assert refused(**options).startswith("cron 'tests.sched.bad': ")


def _takes_keyword(ctx: Any, *, report_id: int) -> None: ...


def _takes_positional(ctx: Any, day: str) -> None: ...


@pytest.mark.parametrize("body", [_takes_keyword, _takes_positional], ids=["kw", "positional"])
def test_a_task_body_that_takes_input_is_refused(body: Any) -> None:
    with pytest.raises(JobDeclarationInvalid) as caught:
        cron_job(name="tests.sched.bad", cron="0 3 * * *", tz="UTC", tenant="none")(body)
    message = caught.value.message
    assert "'tests.sched.bad'" in message
    assert "must take only the job context" in message
    assert "tests.sched.bad" not in registry


def _takes_optional(ctx: Any, *, dry_run: bool = False, **extra: Any) -> None: ...


@pytest.mark.parametrize(
    ("cron", "tz", "body"),
    [
        ("0 3 * * *", "Europe/Paris", _body),
        ("* * * * * *", "UTC", _body),
        ("*/15 * * * * 30", "America/New_York", _body),
        ("0 9 * * 1-5", "Asia/Tokyo", _takes_optional),
    ],
    ids=["five-fields", "six-fields", "seconds-last", "optional-input"],
)
def test_a_good_task_is_declared_with_its_schedule(cron: str, tz: str, body: Any) -> None:
    handle = cron_job(name="tests.sched.good", cron=cron, tz=tz, tenant="none", catch_up="all")(
        body
    )
    assert registry.get("tests.sched.good") is handle
    assert handle.definition.schedule == Schedule(cron=cron, tz=tz, catch_up="all")
    assert registry.crons() == [d for d in registry.definitions() if d.schedule is not None]
    assert handle.definition in registry.crons()


def test_idempotency_key_is_task_epoch_seconds_name() -> None:
    occurrence = utc(2026, 3, 29, 1, 30)
    assert idempotency_key("reports.nightly", occurrence) == "task:1774747800:reports.nightly"
    paris = occurrence.astimezone(Schedule(cron="* * * * *", tz="Europe/Paris").zone)
    assert idempotency_key("reports.nightly", paris) == "task:1774747800:reports.nightly"


def test_six_fields_count_seconds_last() -> None:
    schedule = Schedule(cron="0 3 * * * 30", tz="UTC")
    assert schedule.next_after(utc(2026, 1, 1)) == utc(2026, 1, 1, 3, 0, 30)
    every_second = Schedule(cron="* * * * * *", tz="UTC")
    start = utc(2026, 1, 1, 12, 0, 0) + timedelta(microseconds=250_000)
    assert every_second.next_after(start) == utc(2026, 1, 1, 12, 0, 1)
    assert every_second.occurrences(start, start + timedelta(seconds=3)) == [
        utc(2026, 1, 1, 12, 0, s) for s in (1, 2, 3)
    ]


# -- DST --------------------------------------------------------------------------------------


def walk(schedule: Schedule, after: datetime, until: datetime) -> list[datetime]:
    """Occurrences by chained ``next_after``, as a running scheduler meets them."""
    found = []
    while (after := schedule.next_after(after)) <= until:
        found.append(after)
    return found


def assert_both_ways(schedule: Schedule, after: datetime, until: datetime, expected: list[str]):
    """``occurrences`` in one call and ``next_after`` chained agree on exactly ``expected``."""
    assert hm(walk(schedule, after, until)) == expected, "next_after"
    assert hm(schedule.occurrences(after, until)) == expected, "occurrences"


# Europe/Paris: 2026-03-29 02:00 CET -> 03:00 CEST (at 01:00 UTC);
#               2026-10-25 03:00 CEST -> 02:00 CET (at 01:00 UTC).
# America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (at 07:00 UTC);
#                   2026-11-01 02:00 EDT -> 01:00 EST (at 06:00 UTC).


@pytest.mark.parametrize(
    ("tz", "cron", "after", "until", "expected"),
    [
        # 02:30 does not exist that night: it runs once, an hour later on the wall clock (03:30
        # CEST = 01:30 UTC); the days around it run at 02:30 local.
        (
            "Europe/Paris",
            "30 2 * * *",
            utc(2026, 3, 27, 12),
            utc(2026, 3, 30, 12),
            ["03-28 01:30", "03-29 01:30", "03-30 00:30"],
        ),
        (
            "America/New_York",
            "30 2 * * *",
            utc(2026, 3, 7, 12),
            utc(2026, 3, 9, 12),
            ["03-08 07:30", "03-09 06:30"],
        ),
    ],
    ids=["paris", "new-york"],
)
def test_a_nonexistent_local_time_runs_once_shifted_past_the_gap(tz, cron, after, until, expected):
    schedule = Schedule(cron=cron, tz=tz)
    assert_both_ways(schedule, after, until, expected)
    gap_night = schedule.occurrences(after, until)[-2 if tz == "Europe/Paris" else 0]
    assert gap_night.astimezone(schedule.zone).strftime("%H:%M %Z") == "03:30 " + (
        "CEST" if tz == "Europe/Paris" else "EDT"
    )


@pytest.mark.parametrize(
    ("tz", "cron", "after", "until", "expected"),
    [
        # 02:30 happens twice that night (CEST, then CET): it runs once, at the first.
        (
            "Europe/Paris",
            "30 2 * * *",
            utc(2026, 10, 23, 12),
            utc(2026, 10, 26, 12),
            ["10-24 00:30", "10-25 00:30", "10-26 01:30"],
        ),
        (
            "America/New_York",
            "30 1 * * *",
            utc(2026, 10, 31, 12),
            utc(2026, 11, 2, 12),
            ["11-01 05:30", "11-02 06:30"],
        ),
    ],
    ids=["paris", "new-york"],
)
def test_an_ambiguous_local_time_runs_once_at_its_first_occurrence(
    tz, cron, after, until, expected
):
    schedule = Schedule(cron=cron, tz=tz)
    assert_both_ways(schedule, after, until, expected)
    first = schedule.occurrences(after, until)[-2]
    assert first.astimezone(schedule.zone).fold == 0
    assert first.astimezone(schedule.zone).strftime("%Z") in {"CEST", "EDT"}


@pytest.mark.parametrize(
    ("tz", "after", "until", "expected"),
    [
        # 01:00 CET, [02:00 does not exist: shifted to 03:00 CEST, which also is a slot: one
        # fire], 04:00, 05:00, 06:00 CEST. The day has 23 hours, so 23 fires.
        (
            "Europe/Paris",
            utc(2026, 3, 28, 23, 30),
            utc(2026, 3, 29, 4),
            ["03-29 00:00", "03-29 01:00", "03-29 02:00", "03-29 03:00", "03-29 04:00"],
        ),
        # 01:00 CEST, 02:00 CEST (the first 02:00), [02:00 CET: the same wall-clock slot
        # again, not fired], 03:00 CET, 04:00 CET.
        (
            "Europe/Paris",
            utc(2026, 10, 24, 22, 30),
            utc(2026, 10, 25, 3),
            ["10-24 23:00", "10-25 00:00", "10-25 02:00", "10-25 03:00"],
        ),
        (
            "America/New_York",
            utc(2026, 3, 8, 4, 30),
            utc(2026, 3, 8, 9),
            ["03-08 05:00", "03-08 06:00", "03-08 07:00", "03-08 08:00", "03-08 09:00"],
        ),
        (
            "America/New_York",
            utc(2026, 11, 1, 2, 30),
            utc(2026, 11, 1, 8),
            ["11-01 03:00", "11-01 04:00", "11-01 05:00", "11-01 07:00", "11-01 08:00"],
        ),
    ],
    ids=["paris-spring", "paris-autumn", "new-york-spring", "new-york-autumn"],
)
def test_an_hourly_cron_through_a_transition(tz, after, until, expected):
    assert_both_ways(Schedule(cron="0 * * * *", tz=tz), after, until, expected)


def ten_minutes(start: datetime, end: datetime, skip: tuple[datetime, datetime] | None = None):
    out, at = [], start
    while at <= end:
        if skip is None or not skip[0] <= at < skip[1]:
            out.append(at)
        at += timedelta(minutes=10)
    return hm(out)


@pytest.mark.parametrize(
    ("tz", "after", "until", "expected"),
    [
        # Spring: every UTC ten minutes exactly once (02:00-02:50 local do not exist; their
        # shifted times are the 03:00-03:50 CEST slots, fired once each).
        (
            "Europe/Paris",
            utc(2026, 3, 29, 0, 25),
            utc(2026, 3, 29, 2, 10),
            ten_minutes(utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 2, 10)),
        ),
        # Autumn: 02:00-02:50 happen twice; the second pass (01:00-01:50 UTC) is not fired.
        (
            "Europe/Paris",
            utc(2026, 10, 24, 23, 25),
            utc(2026, 10, 25, 2, 10),
            ten_minutes(
                utc(2026, 10, 24, 23, 30),
                utc(2026, 10, 25, 2, 10),
                skip=(utc(2026, 10, 25, 1), utc(2026, 10, 25, 2)),
            ),
        ),
        (
            "America/New_York",
            utc(2026, 3, 8, 6, 25),
            utc(2026, 3, 8, 8, 10),
            ten_minutes(utc(2026, 3, 8, 6, 30), utc(2026, 3, 8, 8, 10)),
        ),
        (
            "America/New_York",
            utc(2026, 11, 1, 4, 25),
            utc(2026, 11, 1, 7, 10),
            ten_minutes(
                utc(2026, 11, 1, 4, 30),
                utc(2026, 11, 1, 7, 10),
                skip=(utc(2026, 11, 1, 6), utc(2026, 11, 1, 7)),
            ),
        ),
    ],
    ids=["paris-spring", "paris-autumn", "new-york-spring", "new-york-autumn"],
)
def test_an_every_ten_minutes_cron_through_a_transition(tz, after, until, expected):
    assert_both_ways(Schedule(cron="*/10 * * * *", tz=tz), after, until, expected)


def test_occurrences_never_repeat_an_instant_over_a_whole_dst_year() -> None:
    for tz in ("Europe/Paris", "America/New_York"):
        for cron in ("0 * * * *", "*/10 * * * *", "30 2 * * *", "0,30 1-3 * * *"):
            schedule = Schedule(cron=cron, tz=tz)
            found = schedule.occurrences(utc(2026, 1, 1), utc(2027, 1, 1))
            assert found == sorted(set(found)), (tz, cron)


def test_next_after_from_the_second_pass_of_a_repeated_hour() -> None:
    """A watermark inside the repeated hour's second pass (02:15 CET, 01:15 UTC): the next
    ten-minute fire is 03:00 CET, not a replay of the first pass."""
    schedule = Schedule(cron="*/10 * * * *", tz="Europe/Paris")
    assert schedule.next_after(utc(2026, 10, 25, 1, 15)) == utc(2026, 10, 25, 2)
    assert schedule.next_after(utc(2026, 10, 25, 0, 55)) == utc(2026, 10, 25, 2)


def test_the_test_apps_paris_daily_task_on_both_transition_nights() -> None:
    definition = registry.get("tests.paris_daily").definition
    schedule = definition.schedule
    assert schedule == Schedule(cron="30 2 * * *", tz="Europe/Paris", catch_up="run-once")
    assert schedule.next_after(utc(2026, 3, 28, 12)) == utc(2026, 3, 29, 1, 30)
    assert schedule.next_after(utc(2026, 10, 24, 12)) == utc(2026, 10, 25, 0, 30)
    assert schedule.next_after(utc(2026, 10, 25, 0, 30)) == utc(2026, 10, 26, 1, 30)


def test_occurrences_of_an_empty_or_reversed_window() -> None:
    schedule = Schedule(cron="* * * * * *", tz="UTC")
    at = utc(2026, 1, 1)
    assert schedule.occurrences(at, at) == []
    assert schedule.occurrences(at, at - timedelta(hours=1)) == []
    assert schedule.occurrences(at, at + timedelta(seconds=1)) == [at + timedelta(seconds=1)]


# -- the catch-up plan ------------------------------------------------------------------------

NOW = utc(2026, 6, 1, 12, 0, 30)
MINUTES = [utc(2026, 6, 1, 11, m) for m in range(50, 60)] + [utc(2026, 6, 1, 12, 0)]
"""11:50 ... 12:00, one a minute. At 12:00:30 with missed_after 60 the horizon is 11:59:30:
11:50-11:59 (10) were missed, 12:00 is recent."""
MISSED, RECENT = MINUTES[:10], MINUTES[10:]


def steps(catch_up: str, occurrences: list[datetime], *, max_catch_up: int = 100, after=60.0):
    schedule = Schedule(cron="* * * * *", tz="UTC", catch_up=catch_up, max_catch_up=max_catch_up)
    return plan(schedule, occurrences, NOW, after)


def fires(*instants: datetime) -> list[tuple[datetime, bool]]:
    return [(i, True) for i in instants]


def test_plan_skip_moves_past_the_missed_and_fires_the_recent() -> None:
    # A recent occurrence follows the missed ones: it is the latest due, and the only one of
    # them that fires.
    assert steps("skip", MINUTES) == [(MISSED[-1], False), *fires(*RECENT)]


def test_plan_skip_fires_the_latest_missed_when_nothing_recent_follows() -> None:
    """The seed's rule: ``skip`` fires the latest missed occurrence (until 0.1 it fired
    none, so an hourly task down for a day ran again only at the next hour)."""
    assert steps("skip", MISSED) == [(MISSED[-1], True)]
    assert steps("skip", MISSED[:1]) == [(MISSED[0], True)]


def test_plan_run_once_fires_the_latest_missed_once_then_the_recent() -> None:
    assert steps("run-once", MINUTES) == [(MISSED[-1], True), *fires(*RECENT)]


def test_plan_all_fires_every_occurrence() -> None:
    assert steps("all", MINUTES) == fires(*MINUTES)


def test_plan_all_keeps_the_most_recent_max_catch_up_of_the_missed() -> None:
    assert steps("all", MINUTES, max_catch_up=3) == [
        (MISSED[-4], False),
        *fires(*MISSED[-3:]),
        *fires(*RECENT),
    ]
    assert steps("all", MINUTES, max_catch_up=1) == [
        (MISSED[-2], False),
        *fires(MISSED[-1], *RECENT),
    ]
    # Exactly as many as were missed, or more: nothing is skipped.
    assert steps("all", MINUTES, max_catch_up=10) == fires(*MINUTES)
    assert steps("all", MINUTES, max_catch_up=11) == fires(*MINUTES)


@pytest.mark.parametrize("catch_up", ["skip", "run-once", "all"])
def test_plan_with_nothing_missed_fires_everything(catch_up: str) -> None:
    assert steps(catch_up, RECENT) == fires(*RECENT)
    # With missed_after 15 minutes, none of the last ten minutes was missed.
    assert steps(catch_up, MINUTES, max_catch_up=1, after=900) == fires(*MINUTES)


@pytest.mark.parametrize(
    ("catch_up", "expected"),
    [
        ("skip", [(MISSED[-1], True)]),
        ("run-once", [(MISSED[-1], True)]),
        ("all", [(MISSED[-3], False), (MISSED[-2], True), (MISSED[-1], True)]),
    ],
)
def test_plan_with_only_missed_occurrences(catch_up: str, expected: list) -> None:
    assert steps(catch_up, MISSED, max_catch_up=2) == expected


@pytest.mark.parametrize("catch_up", ["skip", "run-once", "all"])
def test_plan_of_no_occurrences_is_empty(catch_up: str) -> None:
    assert steps(catch_up, []) == []


def test_plan_counts_an_occurrence_at_the_horizon_as_recent() -> None:
    horizon = NOW - timedelta(seconds=60)
    just_missed = horizon - timedelta(microseconds=1)
    assert steps("skip", [just_missed, horizon]) == [(just_missed, False), (horizon, True)]


def test_plan_with_missed_after_zero_misses_everything_before_now() -> None:
    assert steps("skip", [*MINUTES, NOW], after=0) == [(MINUTES[-1], False), (NOW, True)]
