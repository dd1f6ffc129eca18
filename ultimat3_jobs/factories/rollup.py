"""``rollup(name, ...)`` and ``refresh_view(name, view)``: one statement per run.

Layer: factories. A rollup is ONE ``insert into target (...) <source select> on conflict (key)
do update set ...`` (a run folds what the source answers now, and a second run of the same
source changes nothing more); a view refresh is ONE ``refresh materialized view [concurrently]``.
Each runs as the job's one step (``upsert`` or ``refresh``), on the Django alias ``database``,
and stores how many rows it wrote. Declared as a job, or as a cron job with ``cron=``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.db import connections

from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobHandle, job
from ultimat3_jobs.model.definitions import cron as cron_job

IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]{0,62}"
QUALIFIED = rf"{IDENTIFIER}(\.{IDENTIFIER})?"


def _refuse(kind: str, name: str, option: str, rule: str, value: Any) -> JobDeclarationInvalid:
    return JobDeclarationInvalid(f"{kind} {name!r}: {option} {rule}; got {value!r}")


def _quoted(kind: str, name: str, option: str, value: Any, pattern: str = IDENTIFIER) -> str:
    if not isinstance(value, str) or not re.fullmatch(pattern, value):
        raise _refuse(kind, name, option, f"must be an SQL name matching {pattern}", value)
    return ".".join(f'"{part}"' for part in value.split("."))


def _names(kind: str, name: str, option: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, str) or not values:
        raise _refuse(kind, name, option, "must be a non-empty list of column names", values)
    return [_quoted(kind, name, option, value) for value in values]


def _declare(name: str, body: Any, *, cron: str | None, tz: str, queue: str | None) -> JobHandle:
    if cron is not None:
        return cron_job(cron=cron, tz=tz, name=name, queue=queue, tenant="none")(body)
    return job(name=name, queue=queue, tenant="none")(body)


def rollup(
    name: str,
    *,
    source: str,
    target: str,
    key: Sequence[str],
    columns: Sequence[str],
    params: dict[str, Any] | None = None,
    database: str = "default",
    cron: str | None = None,
    tz: str = "UTC",
    queue: str | None = None,
) -> JobHandle:
    """Declare a rollup: ``source`` is a SELECT answering ``columns`` (in order), upserted into
    the table ``target`` on its unique ``key`` columns; the other columns are set from the
    source (``excluded``). ``params`` are bound to the source's ``%(name)s`` placeholders."""
    if not isinstance(source, str) or not source.strip().lower().startswith(("select", "with")):
        raise _refuse("rollup", name, "source", "must be a SELECT (or WITH ... SELECT)", source)
    table = _quoted("rollup", name, "target", target, QUALIFIED)
    into = _names("rollup", name, "columns", columns)
    conflict = _names("rollup", name, "key", key)
    if not set(conflict) <= set(into):
        raise _refuse("rollup", name, "key", "must be among the columns", list(key))
    updates = [column for column in into if column not in conflict]
    action = (
        "do update set " + ", ".join(f"{c} = excluded.{c}" for c in updates)
        if updates
        else "do nothing"
    )
    statement = (
        f"insert into {table} ({', '.join(into)}) {source.strip().rstrip(';')} "
        f"on conflict ({', '.join(conflict)}) {action}"
    )
    bound = dict(params or {})

    def upsert() -> int:
        with connections[database].cursor() as cursor:
            cursor.execute(statement, bound)
            return int(cursor.rowcount)

    def body(ctx: JobContext) -> dict[str, int]:
        return {"rows": ctx.step.run("upsert", upsert)}

    body.__qualname__ = f"rollup[{name}]"
    return _declare(name, body, cron=cron, tz=tz, queue=queue)


def refresh_view(
    name: str,
    view: str,
    *,
    concurrently: bool = True,
    database: str = "default",
    cron: str | None = None,
    tz: str = "UTC",
    queue: str | None = None,
) -> JobHandle:
    """Declare a refresh of the materialized view ``view`` (``concurrently``: readers are not
    blocked; the view needs a unique index)."""
    quoted = _quoted("refresh_view", name, "view", view, QUALIFIED)
    statement = f"refresh materialized view {'concurrently ' if concurrently else ''}{quoted}"

    def refresh() -> bool:
        with connections[database].cursor() as cursor:
            cursor.execute(statement)
        return True

    def body(ctx: JobContext) -> dict[str, bool]:
        return {"refreshed": ctx.step.run("refresh", refresh)}

    body.__qualname__ = f"refresh_view[{name}]"
    return _declare(name, body, cron=cron, tz=tz, queue=queue)
