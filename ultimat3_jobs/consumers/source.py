"""What a consumer reads: a :class:`Source` answers the next items after a cursor, in cursor
order, each with its own cursor.

``rows_after(queryset, key="pk")`` reads a queryset (or a model's rows) in ``key`` order; any
callable ``read(after, limit)`` answering ``[(cursor, item), ...]`` is a source too. A cursor is
stored as JSON: an integer or a string.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from django.db import models

from ultimat3_jobs.errors import ConsumerInvalid

Cursor = int | str
Read = Callable[[Cursor | None, int], Sequence[tuple[Cursor, Any]]]


@runtime_checkable
class Source(Protocol):
    """``read(after, limit)``: at most ``limit`` ``(cursor, item)`` pairs after ``after`` (from
    the start when ``None``), in increasing cursor order. ``lag(after)``: how many items are
    after ``after``, or ``None`` when the source cannot tell."""

    def read(self, after: Cursor | None, limit: int) -> Sequence[tuple[Cursor, Any]]: ...

    def lag(self, after: Cursor | None) -> int | None: ...


class QuerySetSource:
    """The rows of a queryset in ``key`` order; the cursor is the last row's ``key``."""

    def __init__(self, queryset: models.QuerySet[Any], key: str) -> None:
        self.queryset = queryset
        self.key = key

    def __repr__(self) -> str:
        return f"<rows of {self.queryset.model._meta.label} after {self.key}>"

    def _after(self, after: Cursor | None) -> models.QuerySet[Any]:
        rows = self.queryset.all()
        return rows if after is None else rows.filter(**{f"{self.key}__gt": after})

    def read(self, after: Cursor | None, limit: int) -> list[tuple[Cursor, Any]]:
        rows = self._after(after).order_by(self.key)[:limit]
        return [(getattr(row, self.key), row) for row in rows]

    def lag(self, after: Cursor | None) -> int | None:
        return self._after(after).count()


class CallableSource:
    """A ``read(after, limit)`` function; its lag is unknown."""

    def __init__(self, read: Read) -> None:
        self._read = read

    def __repr__(self) -> str:
        return f"<source {getattr(self._read, '__qualname__', self._read)!r}>"

    def read(self, after: Cursor | None, limit: int) -> Sequence[tuple[Cursor, Any]]:
        return self._read(after, limit)

    def lag(self, after: Cursor | None) -> int | None:
        return None


def rows_after(rows: models.QuerySet[Any] | type[models.Model], *, key: str = "pk") -> Source:
    """The rows of a queryset (or of a model) in ``key`` order, ``key`` a unique field whose
    values only grow as rows are committed (an identity column written by one writer, a
    commit-ordered sequence): a row committed later with a smaller key than the cursor is
    never read."""
    if isinstance(rows, type) and issubclass(rows, models.Model):
        rows = rows._default_manager.all()
    if not isinstance(rows, models.QuerySet):
        raise ConsumerInvalid(
            f"rows_after() reads a queryset or a model; got {type(rows).__name__}",
            field="source",
        )
    model = rows.model
    name = model._meta.pk.name if key == "pk" else key
    try:
        field = model._meta.get_field(name)
    except Exception as exc:
        raise ConsumerInvalid(
            f"rows_after(): {model._meta.label} has no field {key!r} to order by", field="key"
        ) from exc
    if not (field.unique or field.primary_key):
        raise ConsumerInvalid(
            f"rows_after(): {model._meta.label}.{name} is not unique: a cursor on it could skip "
            "or repeat rows",
            field="key",
        )
    return QuerySetSource(rows, field.attname)


def as_source(source: Any) -> Source:
    """A :class:`Source` from what ``consumer(source=...)`` was given."""
    if isinstance(source, models.QuerySet) or (
        isinstance(source, type) and issubclass(source, models.Model)
    ):
        return rows_after(source)
    if isinstance(source, Source):
        return source
    if callable(source):
        return CallableSource(source)
    raise ConsumerInvalid(
        "source must be a queryset, a model, rows_after(...), an object with read() and lag(), "
        f"or a callable read(after, limit); got {type(source).__name__}",
        field="source",
    )
