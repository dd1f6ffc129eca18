"""The PostgreSQL driver reads rows by column name, never by position.

Every mapping in ``drivers/postgres/rows/`` asks for its columns by name once per result; a
statement whose select or returning list loses a column fails naming the statement and the
column. No module of the driver indexes anything by a literal integer (``row[0]``,
``rows[0][1]``, ``row[-1]``), so a moved column cannot be read as another one.
"""

from __future__ import annotations

import ast
import inspect
import uuid
from dataclasses import fields
from pathlib import Path

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres import driver as driver_module
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.drivers.postgres.rows import jobs as job_rows
from ultimat3_jobs.drivers.postgres.rows.result import ColumnMissing, Result, fetch, records
from ultimat3_jobs.drivers.steps_seam import StepRecord
from ultimat3_jobs.models import Job
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import ClaimedJob, EnqueueRequest

from .test_statements import COPIES, PARAMS

DRIVER_DIR = Path(driver_module.__file__).resolve().parent

# (module, the source of the subscript): integer indexes that read no row.
ALLOWED: set[tuple[str, str]] = {
    # The first line of a database error's text.
    ("translate.py", "lines[0]"),
    # The text before a statements file's first header.
    ("queries.py", "parts[0]"),
    # The first line of a statement's text while its leading comments are stripped.
    ("queries.py", "lines[0]"),
    # The statements of a file, out of (statements, fragments) as the loader parses it.
    ("queries.py", "parse_parts(text, source=source)[0]"),
    # The last job of a page of dataclasses (the next page's cursor).
    ("operating.py", "page[-1]"),
}


def _literal_int(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def integer_indexes(source: str) -> list[str]:
    """Every ``x[<int literal>]`` of ``source`` (negative literals included), as source text."""
    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Subscript) and _literal_int(node.slice)
    ]


def test_no_driver_module_indexes_by_a_literal_integer() -> None:
    found = [
        (str(path.relative_to(DRIVER_DIR)), text)
        for path in sorted(DRIVER_DIR.rglob("*.py"))
        for text in integer_indexes(path.read_text(encoding="utf-8"))
    ]
    assert found, "the scan found nothing at all: the allowlisted index moved?"
    assert sorted(set(found) - ALLOWED) == []


def test_the_scan_would_catch_positional_reads() -> None:
    source = "a = row[12]\nb = rows[0][1]\nc = row[-1]\nd = cursor.fetchone()[0]\ne = row[i]\n"
    assert sorted(integer_indexes(source)) == sorted(
        [
            "row[12]",
            "rows[0][1]",
            "rows[0]",
            "row[-1]",
            "cursor.fetchone()[0]",
        ]
    )


def test_a_missing_column_names_the_statement_and_the_column() -> None:
    result = Result("job_claim", ("id", "name"), [])
    with pytest.raises(ColumnMissing) as caught:
        result.positions("id", "claim_token", "queue")
    assert caught.value.statement == "job_claim"
    assert caught.value.missing == ("claim_token", "queue")
    assert str(caught.value) == (
        "statement 'job_claim' returns no column named claim_token, queue; it returns id, name"
    )


@pytest.mark.django_db
def test_a_mapping_fed_another_statement_fails_before_reading_a_row() -> None:
    # job_get returns a job's columns but no claim token: the claim's mapping refuses its rows
    # rather than read whatever sits where the claim token would be.
    PostgresDriver().job_enqueue(
        request=EnqueueRequest(id=uuid.uuid4(), name="tests.echo", queue="default", input_json="{}")
    )
    jobs = Job.objects.db_manager("default")
    job_id = jobs.values_list("id", flat=True).get()
    result = fetch(jobs, "job_get", {"id": job_id})
    assert len(result) == 1
    with pytest.raises(ColumnMissing, match=r"'job_get' returns no column named claim_token"):
        job_rows.claimed_jobs(result)


def test_a_mapping_checks_its_columns_when_no_row_came_back() -> None:
    with pytest.raises(ColumnMissing):
        job_rows.claimed_jobs(Result("job_claim", ("id",), []))
    assert job_rows.claimed_jobs(Result("job_claim", (*job_rows.CLAIMED, "run_at"), [])) == []


def test_columns_are_read_by_name_whatever_their_order() -> None:
    names = (*job_rows.CLAIMED, "run_at")
    token = uuid.uuid4()
    values = dict.fromkeys(names) | {
        "id": uuid.UUID(int=7),
        "name": "tests.echo",
        "queue": "default",
        "input": "{}",
        "attempt": 1,
        "max_attempts": 3,
        "claim_token": token,
        "priority": 0,
    }
    reordered = tuple(reversed(names))
    (claimed,) = job_rows.claimed_jobs(
        Result("job_claim", reordered, [tuple(values[name] for name in reordered)])
    )
    assert isinstance(claimed, ClaimedJob)
    assert (claimed.id, claimed.claim_token, claimed.attempt) == (uuid.UUID(int=7), token, 1)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(set(PARAMS) - COPIES))
def test_every_returned_column_has_its_own_name(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(STATEMENTS[name], PARAMS[name])
        names = [column.name for column in cursor.description or ()]
    assert "?column?" not in names
    assert len(names) == len(set(names)), names


def test_every_public_method_of_the_driver_speaks_seam_errors() -> None:
    public = [
        name
        for name, member in inspect.getmembers(PostgresDriver, inspect.isfunction)
        if not name.startswith("_")
        and member.__module__.startswith("ultimat3_jobs.drivers.postgres")
    ]
    assert "queue_stats" in public and "scheduler_fire" in public and "worker_list" in public
    unwrapped = [
        name for name in public if not hasattr(getattr(PostgresDriver, name), "__wrapped__")
    ]
    assert unwrapped == []


def test_records_reads_a_records_fields_by_name_and_decodes_only_the_named_columns() -> None:
    names = tuple(reversed([field.name for field in fields(StepRecord)]))
    stored = {"name": "s", "seq": 2, "kind": "run", "status": "done", "output": '{"a": 1}'}
    row = tuple(stored.get(name) for name in names)
    (step,) = records(Result("step_list", names, [row]), StepRecord, output=decode_json)
    assert step == StepRecord(name="s", seq=2, kind="run", status="done", output={"a": 1})
    with pytest.raises(ColumnMissing, match=r"returns no column named updated_at"):
        records(Result("step_list", names[1:], []), StepRecord)
