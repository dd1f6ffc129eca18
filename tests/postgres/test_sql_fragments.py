"""One place per rule in the PostgreSQL statements: the job INSERT and the counter upsert are
written once, as ``-- fragment:`` texts, and every statement that writes a job or a counter row
uses them; the loader puts fragments in place and refuses what it cannot place."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres.queries import SQL_DIR, STATEMENTS, load, parse

RAW = "\n".join(_p.read_text() for _p in sorted(SQL_DIR.glob("*.sql")))
WRITTEN = {
    name: body
    for _p in sorted(SQL_DIR.glob("*.sql"))
    for name, body in parse(_p.read_text(), source=_p.name).items()
}


def _count(pattern: str) -> int:
    return len(re.findall(pattern, RAW, re.IGNORECASE))


def test_the_job_insert_and_its_column_list_are_written_once() -> None:
    assert _count(r"\binsert into x_jobs\b") == 1
    assert _count(r"\btraceparent, created_at\b") == 1
    assert _count(r"for key share") == 1
    # The job rows' source (``unnest ... with ordinality``) is part of the insert; other
    # statements number their own arrays the same way (``lease_acquire_many``).
    assert _count(r"with ordinality as r\(\{\{job_row_columns\}\}\)") == 1


def test_the_counter_upsert_is_written_once() -> None:
    assert _count(r"\binsert into x_job_counters\b") == 1
    assert _count(r"on conflict \(name, period, bucket\)") == 1
    assert _count(r"x_job_counters\.completed \+ excluded\.completed") == 1


def test_every_statement_that_writes_a_job_uses_the_shared_definition() -> None:
    inserting = {name for name, body in STATEMENTS.items() if "insert into x_jobs" in body}
    assert inserting == {
        "job_enqueue",
        "job_enqueue_many",
        "job_enqueue_shared",
        "job_enqueue_minted",
        "scheduler_fire",
    }
    for name in inserting:
        written = WRITTEN[name]
        assert "{{job_insert(" in written or "{{job_batch_insert}}" in written, name
    staged = WRITTEN["outbox_stage_many"]
    assert "insert into x_outbox ({{job_columns}})" in staged
    assert "{{job_values}}" in staged and "{{job_batch_rows}}" in staged


def test_every_statement_that_counts_uses_the_shared_upsert() -> None:
    counting = {name for name, body in STATEMENTS.items() if "insert into x_job_counters" in body}
    assert counting == {
        "job_ack_many",
        "job_settle_handoff",
        "job_settle_many",
        "job_settle_many_handoff",
        "job_nack_retry",
        "job_nack_fail",
        "job_nack_drop",
        "job_cancel",
        "job_rescue_expired",
        "counter_rollup",
    }
    for name in counting:
        written = WRITTEN[name]
        shared = ("{{counter_upsert}}", "{{settled_counted}}", "{{acked_counted}}")
        assert any(fragment in written for fragment in shared), name


def test_the_settles_free_slots_and_count_through_one_fragment() -> None:
    for name in ("job_settle_many", "job_nack_retry", "job_nack_fail", "job_nack_drop"):
        assert "{{settled_slots_freed}}" in WRITTEN[name], name
        assert "{{settled_counted}}" in WRITTEN[name], name
    assert _count(r"using settled s where l\.job_id = s\.id") == 1
    assert _count(r"when %\(counts_as_attempt\)s then j\.attempt else") == 1  # nacks' give-back


def test_the_priority_level_walk_is_written_once() -> None:
    assert _count(r"\) as below\b") == 1
    for name in ("job_claim", "queue_demand"):
        assert "as below" in STATEMENTS[name], name


def test_each_purge_and_its_dry_run_count_read_one_definition_of_old() -> None:
    for purge, count, old in (
        ("job_purge_finished", "job_count_finished", "finished_jobs_old"),
        ("events_purge_expired", "event_count_expired", "events_expired"),
        ("counter_purge", "counter_count", "counters_old"),
    ):
        assert "{{purge_oldest(" in WRITTEN[purge] and f"rows={old}," in WRITTEN[purge], purge
        assert WRITTEN[count].endswith(f"{{{{count_capped(rows={old})}}}}"), count


def test_the_batched_purge_its_count_and_the_names_scan_are_written_once() -> None:
    assert _count(r"for update skip locked\n\)\ndelete from") == 1
    assert _count(r"select count\(\*\) as count from \(") == 1
    assert _count(r"union all\n    select \(select \$alias\.name") == 1
    for name in ("queue_stats", "counter_read"):
        assert "{{names_loose_scan(" in WRITTEN[name], name


def test_no_placeholder_is_left_in_a_loaded_statement() -> None:
    for name, body in STATEMENTS.items():
        assert "{{" not in body and "}}" not in body, name
        assert "-- fragment:" not in body, name


def _load(tmp_path: Path, text: str) -> None:
    (tmp_path / "a.sql").write_text(text)
    load(tmp_path)


def test_load_places_a_fragment_within_a_fragment(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text(
        "-- fragment: inner\n-- why\n1\n-- fragment: outer\n-- why\n{{inner}} + 1\n"
        "-- name: s\n-- why\nselect {{outer}}\n"
    )
    assert load(tmp_path)["s"] == "-- why\nselect 1 + 1"


def test_load_binds_a_fragment_s_parameters(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text(
        "-- fragment: one\n-- why\nt.a = 1\n"
        "-- fragment: pick(table, alias, rows)\n-- why\nselect $alias.id from $table $alias"
        " where {{$rows}}\n-- name: s\n-- why\n{{pick(table=x_t, alias=t, rows=one)}}\n"
    )
    assert load(tmp_path)["s"] == "-- why\nselect t.id from x_t t where t.a = 1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- fragment: f(a)\n-- why\n$a\n-- name: s\n-- why\nselect {{f}}\n", "takes \\(a\\)"),
        ("-- fragment: f(a)\n-- why\n$a\n-- name: s\n-- why\n{{f(a=1x)}}\n", "is given"),
        ("-- fragment: f(a)\n-- why\n$b\n-- name: s\n-- why\n{{f(a=x)}}\n", "no parameter"),
        ("-- name: s(a)\n-- why\nselect 1\n", "takes no parameters"),
        ("-- name: s\n-- why\nselect {{missing}}\n", "unknown fragment"),
        ("-- fragment: f\n-- why\n1\n-- name: s\n-- why\nselect 1\n", "used by no statement"),
        ("-- fragment: f\n-- why\n{{f}}\n-- name: s\n-- why\nselect {{f}}\n", "uses itself"),
        ("-- fragment: s\n-- why\n1\n-- name: s\n-- why\nselect {{s}}\n", "named twice"),
    ],
)
def test_load_refuses_a_fragment_it_cannot_place(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _load(tmp_path, text)


def _run(name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(STATEMENTS[name], params)
        return cursor.fetchall() if cursor.description is not None else []


ENQUEUE: dict[str, Any] = {
    "name": "tests.echo",
    "queue": "default",
    "priority": 0,
    "run_at": None,
    "delay_seconds": None,
    "input": "{}",
    "idempotency_key": None,
    "tenant_id": None,
    "enqueued_by": None,
    "max_attempts": 3,
    "lease_seconds": None,
    "traceparent": "00-t-s-01",
    "notify": False,
}


@pytest.mark.django_db
def test_the_shared_insert_keeps_each_path_s_rules() -> None:
    """Through the one INSERT: a paused name is flagged, a delay is honoured, and a fired
    occurrence is due at once whatever timing its request carries."""
    _run("pause_add", {"scope": "job", "target": "tests.echo", "paused_by": "t", "reason": ""})
    delayed = {**ENQUEUE, "id": uuid.uuid4(), "delay_seconds": 60.0}
    assert _run("job_enqueue", delayed)
    later = datetime.now(UTC) + timedelta(hours=1)
    _run("leader_attempt_elect", {"name": "scheduler", "holder": "h", "ttl_seconds": 5.0})
    (state,) = _run("scheduler_cron_sync", {"names": ["tests.every_second"]})
    fired = {
        **ENQUEUE,
        "id": uuid.uuid4(),
        "run_at": later,
        "idempotency_key": "occurrence",
        "cron": "tests.every_second",
        "old_watermark": state[1],
        "occurrence": state[1] + timedelta(seconds=1),
        "dispatch": True,
        "leader": "scheduler",
        "holder": "h",
        "epoch": 1,
    }
    moved, job_id, _ = _run("scheduler_fire", fired)[0]
    assert (moved, job_id) == (1, fired["id"])
    rows = {
        row[0]: row[1:]
        for row in _run_sql(
            "select id, paused, run_at - created_at, traceparent from x_jobs"
            " where id in (%(a)s, %(b)s)",
            {"a": delayed["id"], "b": fired["id"]},
        )
    }
    assert rows[delayed["id"]] == (True, timedelta(seconds=60), "00-t-s-01")
    assert rows[fired["id"]] == (True, timedelta(0), "00-t-s-01")


def _run_sql(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
