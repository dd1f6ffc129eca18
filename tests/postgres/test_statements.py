"""The PostgreSQL driver's named statements: each one runs on the real database, none reads or
returns a whole row, and every table they name is a model's table."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from ultimat3_jobs.drivers.postgres.queries import SQL_DIR, STATEMENTS, parse

PACKAGE = Path(__file__).resolve().parents[2] / "ultimat3_jobs"
A = uuid.UUID(int=1)
B = uuid.UUID(int=2)

ENQUEUE = {
    "id": A,
    "name": "tests.echo",
    "queue": "default",
    "priority": 0,
    "run_at": None,
    "delay_seconds": None,
    "input": "{}",
    "idempotency_key": "k",
    "tenant_id": None,
    "enqueued_by": None,
    "max_attempts": 3,
    "lease_seconds": None,
    "traceparent": None,
    "notify": True,
}
PARAMS: dict[str, dict[str, Any]] = {
    "job_enqueue": ENQUEUE,
    "job_enqueue_resolve": ENQUEUE,
    "job_enqueue_many": {
        "ids": [B],
        "names": ["tests.echo"],
        "queues": ["default"],
        "priorities": [0],
        "run_ats": [None],
        "delays": [None],
        "inputs": ["{}"],
        "keys": [None],
        "tenants": [None],
        "enqueued_bys": [None],
        "max_attempts": [3],
        "lease_seconds": [None],
        "traceparents": [None],
        "notify_queues": ["default"],
    },
    "job_enqueue_shared": {
        **{key: ENQUEUE[key] for key in ("name", "queue", "priority", "run_at")},
        **{key: ENQUEUE[key] for key in ("delay_seconds", "idempotency_key", "enqueued_by")},
        **{key: ENQUEUE[key] for key in ("max_attempts", "lease_seconds", "traceparent")},
        "ids": [uuid.UUID(int=3)],
        "inputs": ["{}"],
        "tenants": [None],
        "notify_queues": ["default"],
    },
    "job_enqueue_many_resolve": {"ids": [A], "names": ["tests.echo"], "keys": ["k"]},
    "job_claim": {"queues": ["default"], "limit": 1, "worker_id": "w", "lease_seconds": 30.0},
    "job_claim_notified": {"id": A, "queues": ["default"], "worker_id": "w", "lease_seconds": 30.0},
    "job_ack_many": {
        "ids": [A],
        "tokens": [A],
        "results": ["null"],
        "progress": [None],
        "relayed": [False],
        "lent_by": [None],
    },
    "job_settle_handoff": {
        "ids": [A],
        "tokens": [A],
        "results": ["null"],
        "progress": [None],
        "relayed": [True],
        "lent_by": [A],
        "next_ids": [A],
        "next_tokens": [A],
        "next_keys": ["job:tests.echo"],
        "next_limits": [2],
        "next_relayed": [False],
    },
    "job_settle_many": {
        "ids": [A, A],
        "tokens": [A, A],
        "actions": ["complete", "drop"],
        "results": ["null", "null"],
        "progress": [None, None],
        "errors": [None, None],
        "delays": [0.0, 0.0],
        "counts": [True, True],
        "relayed": [False, True],
        "lent_by": [None, A],
    },
    "job_settle_many_handoff": {
        "ids": [A, A],
        "tokens": [A, A],
        "actions": ["retry", "fail"],
        "results": ["null", "null"],
        "progress": [None, None],
        "errors": [None, '{"m": 1}'],
        "delays": [0.0, 0.0],
        "counts": [True, False],
        "relayed": [True, False],
        "lent_by": [A, None],
        "next_ids": [A],
        "next_tokens": [A],
        "next_keys": ["job:tests.echo"],
        "next_limits": [2],
        "next_relayed": [False],
    },
    "job_nack_retry": {
        "id": A,
        "claim_token": A,
        "delay_seconds": 0.0,
        "error": None,
        "counts_as_attempt": True,
        "progress": '{"p": 2}',
    },
    "job_nack_fail": {
        "id": A,
        "claim_token": A,
        "error": '{"m": 1}',
        "counts_as_attempt": False,
        "progress": None,
    },
    "job_nack_drop": {"id": A, "claim_token": A},
    "job_heartbeat_many": {
        "ids": [A],
        "tokens": [A],
        "progress": ['{"p": 1}'],
        "lease_seconds": 30.0,
    },
    "job_progress": {"id": A, "claim_token": A, "progress": "{}"},
    "job_cancel": {"id": B, "entry": None},
    "job_requeue": {"id": B},
    "job_requeue_classify": {"id": B},
    "job_rescue_expired_scan": {"limit": 10},
    "job_rescue_expired": {
        "ids": [A, B],
        "tokens": [A, B],
        "actions": ["retry", "drop"],
        "delays": [1.5, 0.0],
        "counts": [True, False],
    },
    "job_mark_pending_many": {"ids": [A], "tokens": [A], "pending": True},
    "job_get": {"id": A},
    "job_list": {
        "states": ["queued", "failed"],
        "queues": ["default"],
        "names": ["tests.echo"],
        "tenant": "t",
        "search": "k",
        "search_id": A,
        "after": B,
        "limit": 51,
    },
    "job_promote": {"id": A},
    "job_remove": {"id": B},
    "job_requeue_failed": {"name": "tests.echo", "limit": 10},
    "queue_stats": {"limit": 10},
    "counter_read": {"since": "2026-01-01T00:00:00+00:00", "period": "minute"},
    "counter_total": {},
    "queue_demand": {"queues": ["default"], "limit": 10},
    "pause_add": {"scope": "queue", "target": "q", "paused_by": "", "reason": ""},
    "pause_remove": {"scope": "queue", "target": "q"},
    "pause_unflag": {"target": "tests.echo"},
    "pause_list": {},
    "worker_heartbeat": {
        "id": "w",
        "host": "h",
        "pid": 1,
        "queues": ["default"],
        "slots": 1,
        "ttl_seconds": 30.0,
        "draining": False,
        "limit": 10,
        "limits": "{}",
    },
    "worker_list": {},
    "worker_remove": {"id": "w"},
    "outbox_stage_many": {
        "ids": [B],
        "names": ["tests.echo"],
        "queues": ["default"],
        "priorities": [0],
        "run_ats": [None],
        "delays": [None],
        "inputs": ["{}"],
        "keys": [None],
        "tenants": [None],
        "enqueued_bys": [None],
        "max_attempts": [3],
        "lease_seconds": [None],
        "traceparents": [None],
        "notify": True,
    },
    "outbox_claim": {"relay_id": "r", "limit": 10, "lease_seconds": 30.0},
    "outbox_mark_published": {"relay_id": "r", "ids": [B]},
    "outbox_record_failure": {"relay_id": "r", "id": B, "error": "e", "retry_seconds": 1.0},
    "scheduler_cron_sync": {"names": ["tests.every_second"]},
    "scheduler_cron_read": {"names": ["tests.every_second"]},
    "outbox_purge_published": {"retention_seconds": 0.0, "limit": 10, "before": None},
    "outbox_count_published": {"before": "2000-01-01T00:00:00Z", "limit": 10},
    "scheduler_fire": {
        **ENQUEUE,
        "cron": "tests.every_second",
        "old_watermark": "2026-01-01T00:00:00+00:00",
        "occurrence": "2026-01-01T00:00:01+00:00",
        "dispatch": True,
        "leader": "scheduler",
        "holder": "h",
        "epoch": 1,
    },
    "leader_attempt_elect": {"name": "scheduler", "holder": "h", "ttl_seconds": 5.0},
    "leader_resign": {"name": "scheduler", "holder": "h"},
    "counter_rollup": {"keep_seconds": 3600.0},
    "wake_notify": {"channel": "ultimat3_jobs_test", "payloads": ["default"]},
    **{
        name: {"id": A, "claim_token": A, "name": "s", "seq": 1, **more}
        for name, more in {
            "step_put": {"kind": "run", "status": "done", "output": "1", "error": None},
            "step_put_done": {"kind": "run", "output": "1", "error": None},
            "step_start_once": {},
            "step_wait": {"kind": "event", "event": "e", "key": "", "seconds": 1.0, "until": None},
            "step_wait_resolve": {},
        }.items()
    },
    "step_get_many": {"id": A},
    "job_suspend": {"id": A, "claim_token": A, "step": "s"},
    "event_send": {"name": "e", "key": "", "payload": "1", "tenant_id": None, "ttl_seconds": 60.0},
    "lease_acquire": {
        "job_id": A,
        "claim_token": A,
        "key": "job:tests.echo",
        "limit": 2,
        "kind": "concurrency",
        "ttl_seconds": 0.0,
    },
    "lease_acquire_many": {"ids": [A], "tokens": [A], "keys": ["job:tests.echo"], "limits": [2]},
    "lease_give_back": {"key": "job:tests.echo", "slot": 0, "job_id": A, "claim_token": A},
    "lease_holders": {"key": "job:tests.echo"},
    "lease_abandon": {"job_id": A, "claim_token": A},
    "lease_release": {"key": "job:tests.echo"},
    "lease_list": {"kind": "concurrency", "limit": 10},
    "events_purge_expired": {"limit": 10, "before": None},
    "clock_now": {},
    "job_purge_finished": {"state": "completed", "before": "2000-01-01T00:00:00Z", "limit": 10},
    "job_count_finished": {"state": "failed", "before": "2000-01-01T00:00:00Z", "limit": 10},
    "event_count_expired": {"before": None, "limit": 10},
    "counter_purge": {"before": "2000-01-01T00:00:00Z", "limit": 10},
    "counter_count": {"before": "2000-01-01T00:00:00Z", "limit": 10},
    "backfill_start": {"name": "b", "scope": "all", "run_id": A, "environment": ""},
    "backfill_get": {"run_id": A},
    "backfill_advance": {"run_id": A, "batch": 1, "cursor": "3", "rows": 3},
    "backfill_step_put": {
        **{"id": A, "claim_token": A, "name": "batch:1", "seq": 1, "kind": "run"},
        **{"output": '{"cursor": 3, "rows": 3, "done": true}', "error": None},
        **{"run_id": A, "batch": 1, "cursor": "3", "rows": 3},
    },
    "backfill_finish": {"run_id": A, "status": "completed", "error": ""},
    "backfill_list": {"limit": 10},
}
# One call's minted, keyless jobs: job_enqueue_shared's parameters with no key, and the size.
PARAMS["job_enqueue_minted"] = {
    **PARAMS["job_enqueue_shared"],
    **{"ids": [uuid.UUID(int=4)], "idempotency_key": None, "size": 1},
}


# The pause flag of a COPY's jobs; the COPY takes no parameters, its rows come by copy().
PARAMS["job_copy_paused"] = {"name": "tests.echo"}
PARAMS["job_enqueue_copy"] = {}
COPIES = frozenset(name for name, text in STATEMENTS.items() if re.search(r"^copy ", text, re.M))
"""The statements fed by ``copy()`` rather than run by ``execute()``: they return no rows."""


def test_every_statement_has_params_here() -> None:
    assert set(PARAMS) == set(STATEMENTS)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(PARAMS))
def test_statement_runs_on_the_real_database(name: str) -> None:
    with connection.cursor() as cursor:
        if name in COPIES:  # fed by copy(): no rows
            with cursor.cursor.copy(STATEMENTS[name]):
                return
        cursor.execute(STATEMENTS[name], PARAMS[name])
        if cursor.description is not None:
            cursor.fetchall()


def _strip_comments(text: str) -> str:
    text = re.sub(r"--[^\n]*", "", text)
    return re.sub(r"#[^\n]*", "", text)


def test_no_production_statement_reads_or_returns_a_whole_row() -> None:
    offenders = []
    pattern = re.compile(r"\b(select|returning)\s+(\w+\.)?\*", re.IGNORECASE)
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in {".py", ".sql"} or "migrations" in path.parts:
            continue
        for number, line in enumerate(_strip_comments(path.read_text()).splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []


def test_the_whole_row_scan_would_catch_one() -> None:
    pattern = re.compile(r"\b(select|returning)\s+(\w+\.)?\*", re.IGNORECASE)
    assert pattern.search("update x set a = 1 returning *")
    assert pattern.search("SELECT j.* from x_jobs j")
    assert not pattern.search("select count(*) from x_jobs")


def test_every_table_named_in_sql_is_a_model_table() -> None:
    tables = {model._meta.db_table for model in apps.get_app_config("ultimat3_jobs").get_models()}
    named = set()
    for body in STATEMENTS.values():
        named |= set(re.findall(r"\b(?:from|into|update|join)\s+(x_[a-z_]+)", body))
    assert named
    assert named <= tables


def test_each_statement_has_a_comment_saying_why() -> None:
    for path in sorted(SQL_DIR.glob("*.sql")):
        text = path.read_text()
        for name in parse(text, source=path.name):
            header = text.split(f"-- name: {name}\n", 1)[1]
            assert header.startswith("-- "), f"{path.name}: {name} has no comment under its name"


def test_parse_refuses_a_name_used_twice() -> None:
    with pytest.raises(ValueError, match="named twice"):
        parse("-- name: a\nselect 1\n-- name: a\nselect 2", source="x.sql")


def test_time_comes_from_the_database_not_the_caller() -> None:
    compares_to_param = re.compile(
        r"(run_at|lease_expires_at|expires_at)\s*(<|>|<=|>=)\s*%\(", re.IGNORECASE
    )
    for name, body in STATEMENTS.items():
        assert not compares_to_param.search(body), name
    for body in (STATEMENTS["job_claim"], STATEMENTS["job_rescue_expired"]):
        assert "now()" in body
    driver_source = (PACKAGE / "drivers" / "postgres" / "driver.py").read_text()
    for clock in ("timezone.now", "datetime.now", "time.time", "utcnow"):
        assert clock not in driver_source
