"""The migrations match the models, and the database has the indexes the statements rely on."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction


@pytest.mark.django_db
def test_models_and_migrations_agree() -> None:
    out = StringIO()
    call_command("makemigrations", "ultimat3_jobs", check=True, dry_run=True, stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_the_database_has_the_claim_and_live_key_indexes() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "select indexname, indexdef from pg_indexes where tablename = 'x_jobs' order by 1"
        )
        indexes = dict(cursor.fetchall())
        cursor.execute(
            """
            select c.column_name, c.data_type from information_schema.columns c
            where c.table_name = 'x_jobs' and c.data_type like 'timestamp%%'
            """
        )
        timestamps = dict(cursor.fetchall())
    claim = indexes["x_jobs_claim"]
    assert "(queue, priority DESC, run_at)" in claim
    assert "WHERE ((NOT paused) AND ((state)::text = 'queued'::text))" in claim
    live_key = indexes["x_jobs_live_key"]
    assert live_key.startswith("CREATE UNIQUE INDEX")
    assert "(name, idempotency_key)" in live_key
    assert "idempotency_key IS NOT NULL" in live_key
    assert "'queued'" in live_key and "'running'" in live_key
    assert set(timestamps.values()) == {"timestamp with time zone"}
    assert {"run_at", "created_at", "lease_expires_at", "started_at", "finished_at"} <= set(
        timestamps
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("column", "value", "constraint"),
    [
        ("state", "'lost'", "x_jobs_state_valid"),
        ("priority", "101", "x_jobs_priority_range"),
        ("max_attempts", "0", "x_jobs_attempts_valid"),
    ],
)
def test_check_constraints_refuse_bad_rows(column: str, value: str, constraint: str) -> None:
    statement = (
        f"insert into x_jobs (id, name, queue, input, {column}) "
        f"values (gen_random_uuid(), 'n', 'q', '{{}}'::jsonb, {value})"
    )
    with (
        pytest.raises(IntegrityError, match=constraint),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
