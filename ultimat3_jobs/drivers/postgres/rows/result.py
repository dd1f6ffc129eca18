"""A statement's result with its column names, and the by-name lookup every mapping uses."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, fields
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from django.db import connections

from ultimat3_jobs.drivers.postgres.bound import BINARY_RESULTS, bound_cursor, may_prepare
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.models import RawStatementManager

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Row = tuple[Any, ...]


class ColumnMissing(LookupError):
    """A mapping needs a column the statement does not return: the statement's select or
    returning list and its mapping drifted apart (a defect of the driver, never of the caller)."""

    def __init__(self, statement: str, missing: list[str], present: tuple[str, ...]) -> None:
        self.statement = statement
        self.missing = tuple(missing)
        self.present = present
        listed = ", ".join(present) if present else "no columns"
        super().__init__(
            f"statement {statement!r} returns no column named {', '.join(missing)}; "
            f"it returns {listed}"
        )


@dataclass(frozen=True, slots=True)
class Result:
    """The rows of one run of a named statement and the names of their columns."""

    statement: str
    names: tuple[str, ...]
    rows: list[Row]

    def __bool__(self) -> bool:
        return bool(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def positions(self, *columns: str) -> tuple[int, ...]:
        """Where each named column sits in a row; checked even when no row came back."""
        where = {name: position for position, name in enumerate(self.names)}
        missing = [column for column in columns if column not in where]
        if missing:
            raise ColumnMissing(self.statement, missing, self.names)
        return tuple(where[column] for column in columns)

    def picker(self, *columns: str) -> Callable[[Row], Row]:
        """A function turning a row into the tuple of the named columns' values, in order."""
        positions = self.positions(*columns)
        if len(positions) == 1:
            (only,) = positions
            return lambda row: (row[only],)
        return itemgetter(*positions)

    def picked(self, *columns: str) -> Iterator[Row]:
        """Every row as the tuple of the named columns' values."""
        return map(self.picker(*columns), self.rows)

    def column(self, name: str) -> list[Any]:
        """One column's values, row by row."""
        (position,) = self.positions(name)
        return [row[position] for row in self.rows]

    def first(self, *columns: str) -> Row | None:
        """The named columns of the first row, or ``None`` when no row came back."""
        pick = self.picker(*columns)
        return next((pick(row) for row in self.rows), None)


def records[D: DataclassInstance](
    result: Result, kind: type[D], /, **convert: Callable[[Any], Any]
) -> list[D]:
    """Every row as a ``kind``, a dataclass whose fields are named as the statement's columns;
    the value of each column named in ``convert`` goes through its function first."""
    names = tuple(field.name for field in fields(kind))
    made = []
    for values in result.picked(*names):
        row = dict(zip(names, values, strict=True))
        for name, decode in convert.items():
            row[name] = decode(row[name])
        made.append(kind(**row))
    return made


def _cursor(manager: RawStatementManager, statement: str) -> AbstractContextManager[Any]:
    """A cursor for ``statement`` on ``manager``'s alias: the hot ones are prepared where
    ``bound.py`` says."""
    connection = connections[manager.db]
    if may_prepare(connection, statement):
        return bound_cursor(manager.db, binary=statement in BINARY_RESULTS)
    return connection.cursor()


def _result(statement: str, cursor: Any) -> Result:
    description = cursor.description  # read once: psycopg builds its columns on each read
    if description is None:
        return Result(statement, (), [])
    names = tuple(column.name for column in description)
    return Result(statement, names, list(cursor.fetchall()))


def _pipelined_result(statement: str, cursor: Any) -> Result:
    """A pipelined statement's rows: its answer is read (and its columns known) at the first
    fetch; only statements that return rows are pipelined."""
    rows = list(cursor.fetchall())
    return Result(statement, tuple(column.name for column in cursor.description), rows)


def fetch(
    manager: RawStatementManager, statement: str, params: dict[str, Any] | None = None
) -> Result:
    """Run ``statement`` (a name from ``sql/*.sql``) on ``manager``'s alias, keeping the names
    of the columns it returns (none for a statement without ``returning``); the hot ones bind
    server-side (``bound.py``)."""
    with _cursor(manager, statement) as cursor:
        cursor.execute(STATEMENTS[statement], params or {})
        return _result(statement, cursor)


def fetch_pipelined(
    manager: RawStatementManager, runs: Iterable[tuple[str, dict[str, Any]]]
) -> list[Result]:
    """:func:`fetch` for each ``(statement, params)`` of ``runs``, sent in pipeline mode: each
    is sent as soon as ``runs`` yields it (the next one is built while the database runs it)
    and the answers are read once all are sent. Statements in one pipeline run as one
    transaction (no Sync between them): call it inside ``transaction.atomic()``, so that an
    error raised before the end, by the database or while building a later run, rolls back
    every run already sent instead of the pipeline's closing Sync committing them."""
    connection = connections[manager.db]
    connection.ensure_connection()
    sent: list[tuple[str, Any]] = []
    pipeline = connection.connection.pipeline
    with ExitStack() as cursors, connection.wrap_database_errors, pipeline():
        for statement, params in runs:
            cursor = cursors.enter_context(_cursor(manager, statement))
            cursor.execute(STATEMENTS[statement], params)
            sent.append((statement, cursor))
        return [_pipelined_result(statement, cursor) for statement, cursor in sent]


def as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
