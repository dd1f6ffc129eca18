"""Where a backfill's rows come from: a queryset read by its primary key, or a ``pages``
callable; and how its ``count`` is read.

Layer: factories. A reader answers a :class:`Page` for ``(cursor, limit)``; the cursor is JSON
(an int or a string), stored by the batch's step, never the rows. A queryset is handed to
``handle`` as its model instances (``rows="instances"``) or as a QuerySet bounded by the batch's
key range (``rows="queryset"``), whose rows are never loaded: only the range's last key is read."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from django.db import models

from ultimat3_jobs.errors import BackfillInvalid

READ_AHEAD_BATCHES = 8
"""How many batches' boundaries one key read of a ``rows="queryset"`` backfill finds."""
READ_AHEAD_SECONDS = 1.0
"""How long a boundary found ahead stays usable: past it, the batch reads its keys afresh."""

RowsMode = Literal["instances", "queryset"]
ROWS_MODES: tuple[str, ...] = ("instances", "queryset")


@dataclass(frozen=True, slots=True)
class Page:
    """One batch as read: what ``handle`` gets, how many rows it holds, the cursor after it
    (the last row's key) and whether it is the last batch (fewer rows than asked)."""

    rows: Any
    count: int
    cursor: Any
    done: bool


Reader = Callable[[Any, int], Page]


def cursor_of(value: Any) -> Any:
    """A primary key as a JSON cursor: an int stays an int, anything else is its text."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"a primary key of {value!r} cannot be a cursor")
    if isinstance(value, int):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)


def reader_for(name: str, *, queryset: Any, pages: Any, rows: Any = "instances") -> Reader:
    """The reader of a backfill's one source; refuses a source without a usable ordering key
    and a ``rows`` mode it cannot give."""
    if not isinstance(rows, str) or rows not in ROWS_MODES:
        raise BackfillInvalid(
            f'backfill {name!r}: rows must be "instances" or "queryset"; got {rows!r}'
        )
    if pages is not None:
        if not callable(pages):
            raise BackfillInvalid(f"backfill {name!r}: pages must be callable; got {pages!r}")
        if rows != "instances":
            raise BackfillInvalid(
                f'backfill {name!r}: rows must be "instances" with pages= (a key range needs '
                f"queryset=); got {rows!r}"
            )
        return _pages_reader(pages)
    ordered = _ordered(name, queryset)
    return _range_reader(ordered) if rows == "queryset" else _instances_reader(ordered)


def _pages_reader(pages: Callable[[Any, int], tuple[list[Any], Any]]) -> Reader:
    def read(cursor: Any, limit: int) -> Page:
        rows, following = pages(cursor, limit)
        rows = list(rows)
        return Page(rows, len(rows), following, following is None or not rows)

    return read


def _ordered(name: str, queryset: Any) -> Any:
    """``queryset`` ordered by its primary key, once it is known to have a usable one."""
    model = getattr(queryset, "model", None)
    query = getattr(queryset, "query", None)
    if model is None or query is None or not hasattr(queryset, "filter"):
        raise BackfillInvalid(f"backfill {name!r}: queryset must be a QuerySet; got {queryset!r}")
    meta = model._meta
    if meta.pk is None or getattr(meta, "is_composite_pk", False):
        raise BackfillInvalid(
            f"backfill {name!r}: queryset must have a usable ordering key (a single-column "
            f"primary key); {meta.label} has {'a composite' if meta.pk else 'no'} primary key"
        )
    if getattr(queryset, "_fields", None) is not None:
        raise BackfillInvalid(
            f"backfill {name!r}: queryset must yield model instances (no values() or "
            "values_list()): the cursor is each row's primary key"
        )
    if query.is_sliced:
        raise BackfillInvalid(
            f"backfill {name!r}: queryset must not be sliced: the backfill reads it in batches"
        )
    return queryset.order_by("pk")


def _instances_reader(ordered: Any) -> Reader:
    def read(cursor: Any, limit: int) -> Page:
        page = ordered if cursor is None else ordered.filter(pk__gt=cursor)
        rows = list(page[:limit])
        following = cursor_of(rows[-1].pk) if rows else cursor
        return Page(rows, len(rows), following, len(rows) < limit)

    return read


class _CursorSlot(models.Expression):
    """Where the cursor goes in the range reader's compiled key read: compiled as one
    placeholder whose parameter is the slot itself, found and replaced on each read."""

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        return "%s", [self]


@dataclass(frozen=True, slots=True)
class _KeyRead:
    """A key read compiled once: its SQL, its parameters and the index of the cursor's. The
    cursor goes in, and the keys (each row's first column) come out, as the primary key's
    field converts them."""

    sql: str
    params: tuple[Any, ...]
    slot: int | None
    connection: Any
    key: Any

    def rows(self, cursor: Any) -> list[tuple[Any, ...]]:
        params = list(self.params)
        if self.slot is not None:
            params[self.slot] = self.key.get_db_prep_value(cursor, self.connection)
        with self.connection.cursor() as db_cursor:
            db_cursor.execute(self.sql, params)
            return [(self.key.to_python(row[0]), *row[1:]) for row in db_cursor.fetchall()]


def _compile(ordered: Any, *, after: bool, limit: int) -> _KeyRead:
    """The boundaries of the next :data:`READ_AHEAD_BATCHES` batches of ``limit`` keys of
    ``ordered`` (after a cursor or from the start), compiled once as the queryset's own
    database speaks it: each full batch's last key with its position (a multiple of
    ``limit``), and the last key read with its position when that is not one."""
    key = ordered.model._meta.pk
    page = ordered.filter(pk__gt=_CursorSlot(output_field=key)) if after else ordered
    keys = page.values_list("pk", flat=True)[: limit * READ_AHEAD_BATCHES]
    compiler = keys.query.get_compiler(using=keys.db)
    inner, params = compiler.as_sql()
    ends = ", ".join(str(limit * n) for n in range(1, READ_AHEAD_BATCHES + 1))
    sql = (
        "SELECT w.k, w.n FROM (SELECT s.pk AS k, ROW_NUMBER() OVER (ORDER BY s.pk) AS n, "
        f"COUNT(*) OVER () AS c FROM ({inner}) s) w WHERE w.n IN ({ends}) OR w.n = w.c "
        "ORDER BY w.n"
    )
    slots = [n for n, param in enumerate(params) if isinstance(param, _CursorSlot)]
    slot = slots[0] if slots else None
    return _KeyRead(sql, tuple(params), slot, compiler.connection, key)


class _Ahead:
    """The batch boundaries a key read found beyond its own batch: the next batch's last key
    by its cursor, each taken once and only while fresh (a read made for one run is never a
    later run's)."""

    def __init__(self) -> None:
        self._found: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def take(self, cursor: Any) -> Any:
        with self._lock:
            found = self._found.pop(cursor, None)
        if found is None or time.monotonic() - found[0] > READ_AHEAD_SECONDS:
            return None
        return found[1]

    def keep(self, lasts: list[Any]) -> None:
        """``lasts``: consecutive full batches' last keys; each is the next one's cursor."""
        now = time.monotonic()
        with self._lock:
            self._found = {
                cursor_of(cursor): (now, last) for cursor, last in itertools.pairwise(lasts)
            }


def _range_reader(ordered: Any) -> Reader:
    """A batch reads no rows, only keys through the primary key's index, and one read serves
    up to :data:`READ_AHEAD_BATCHES` batches: it finds the last key of each full batch (every
    ``limit``-th key after the cursor) and of a short last one. The QuerySet handed on is
    ``cursor < pk <= last key``, with the source's own filters; its count is the keys the read
    found there. The read is compiled once (per batch size) and run with the cursor in its
    place: a batch does not pay Django's compilation of the read."""
    compiled: dict[tuple[bool, int], _KeyRead] = {}
    ahead = _Ahead()

    def boundary(cursor: Any, limit: int) -> tuple[Any, int]:
        """The batch's last key and its count of keys (0: nothing after ``cursor``)."""
        last = None if cursor is None else ahead.take(cursor)
        if last is not None:
            return last, limit
        shape = (cursor is not None, limit)
        read = compiled.get(shape)
        if read is None:
            read = compiled[shape] = _compile(ordered, after=shape[0], limit=limit)
        found = read.rows(cursor)
        if not found:
            return None, 0
        ahead.keep([row[0] for row in found if row[1] % limit == 0])
        return found[0][0], int(found[0][1])

    def read(cursor: Any, limit: int) -> Page:
        last, count = boundary(cursor, limit)
        if not count:
            return Page(ordered.none(), 0, cursor, True)
        bounds = {"pk__lte": last} if cursor is None else {"pk__gt": cursor, "pk__lte": last}
        return Page(ordered.filter(**bounds), count, cursor_of(last), count < limit)

    return read


def count_of(count: Any) -> int:
    """Rows still to do: ``count`` is a queryset (counted), a callable answering an int, or
    ``None`` (nothing to check)."""
    if count is None:
        return 0
    if callable(count):
        return int(count())
    return int(count.count())
