"""Where a backfill's rows come from: a queryset read by its primary key, or a ``pages``
callable; and how its ``count`` is read.

Layer: factories. A reader answers ``(rows, next_cursor, done)`` for ``(cursor, limit)``; the
cursor is JSON (an int or a string), stored by the batch's step, never the rows."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ultimat3_jobs.errors import BackfillInvalid

Reader = Callable[[Any, int], tuple[list[Any], Any, bool]]


def cursor_of(value: Any) -> Any:
    """A primary key as a JSON cursor: an int stays an int, anything else is its text."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"a primary key of {value!r} cannot be a cursor")
    if isinstance(value, int):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)


def reader_for(name: str, *, queryset: Any, pages: Any) -> Reader:
    """The reader of a backfill's one source; refuses a source without a usable ordering key."""
    if pages is not None:
        if not callable(pages):
            raise BackfillInvalid(f"backfill {name!r}: pages must be callable; got {pages!r}")
        return _pages_reader(pages)
    return _queryset_reader(name, queryset)


def _pages_reader(pages: Callable[[Any, int], tuple[list[Any], Any]]) -> Reader:
    def read(cursor: Any, limit: int) -> tuple[list[Any], Any, bool]:
        rows, following = pages(cursor, limit)
        rows = list(rows)
        return rows, following, following is None or not rows

    return read


def _queryset_reader(name: str, queryset: Any) -> Reader:
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
    ordered = queryset.order_by("pk")

    def read(cursor: Any, limit: int) -> tuple[list[Any], Any, bool]:
        page = ordered if cursor is None else ordered.filter(pk__gt=cursor)
        rows = list(page[:limit])
        following = cursor_of(rows[-1].pk) if rows else cursor
        return rows, following, len(rows) < limit

    return read


def count_of(count: Any) -> int:
    """Rows still to do: ``count`` is a queryset (counted), a callable answering an int, or
    ``None`` (nothing to check)."""
    if count is None:
        return 0
    if callable(count):
        return int(count())
    return int(count.count())
