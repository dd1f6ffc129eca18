"""Rows read through the driver, for the changelists of a store the ORM cannot read.

Where the driver's :attr:`~ultimat3_jobs.drivers.base.JobDriver.store_in_orm` is False (Redis,
memory), the admin's ``get_queryset`` answers a :class:`DriverRows` instead of a ``QuerySet``:
a lazy, read-only sequence of unsaved model instances, built from what the driver's operator
methods answer, with the part of ``QuerySet``'s interface the changelist, its filters, its
paginator and its actions use (exact filters, ``__in``, slices, ``values_list``). Anything else
is refused with :class:`TypeError` rather than answered wrongly. :func:`filtered_rows` is the
changelist's ``get_queryset`` for such rows: the declared filters and the search, nothing else
from the URL.

Layer: surface.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.db import models
from django.db.models import Q
from django.http import HttpRequest


def _same(found: Any, wanted: Any) -> bool:
    if found is None or wanted is None:
        return found is None and wanted is None
    return str(found) == str(wanted)


def matches(row: Any, lookups: Mapping[str, Any]) -> bool:
    """Whether ``row`` meets every lookup: ``field`` (equal, compared as text, as a URL gives
    it) or ``field__in`` (one of)."""
    for key, wanted in lookups.items():
        if key.endswith("__in"):
            found = getattr(row, key[:-4])
            if not any(_same(found, value) for value in wanted):
                return False
        elif not _same(getattr(row, key), wanted):
            return False
    return True


def _q_lookups(q: Any) -> list[tuple[str, Any]]:
    """The lookups of a ``Q`` Django's field filters build: an AND of ``(lookup, value)``
    pairs, or an OR of one lookup's values (``lookup__in``)."""
    if not isinstance(q, Q) or q.negated:
        raise TypeError(f"rows read through the driver take exact lookups only, not {q!r}")
    children: list[Any] = list(q.children)
    pairs = [child for child in children if isinstance(child, tuple)]
    if q.connector == Q.OR and len(children) > 1:
        keys = {str(key) for key, _ in pairs}
        if len(keys) != 1 or len(pairs) != len(children):
            raise TypeError(f"rows read through the driver take no OR of lookups: {q!r}")
        key = keys.pop().removesuffix("__exact")
        return [(f"{key}__in", [value for _, value in pairs])]
    found: list[tuple[str, Any]] = []
    for child in children:
        found += _q_lookups(child) if isinstance(child, Q) else [(str(child[0]), child[1])]
    return found


class DriverRows(abc.ABC):
    """A lazy, read-only ``QuerySet`` stand-in over rows a driver answers.

    ``filter`` keeps exact lookups (``field``, ``field__exact``, ``field__in``, ``pk``); the
    rows are read when sliced or iterated. Ordering is the driver's (``order_by`` is accepted and
    changes nothing); ``distinct``, ``only``, ``using`` and ``select_related`` change nothing
    either."""

    def __init__(self, model: type[models.Model], lookups: Mapping[str, Any] | None = None):
        self.model: Any = model  # a model class: its DoesNotExist is per class
        self.lookups: dict[str, Any] = dict(lookups or {})
        self.empty = False

    @abc.abstractmethod
    def read(self, stop: int | None) -> list[Any]:
        """The first ``stop`` rows that meet :attr:`lookups` (all when ``None``)."""

    def _copy(self, lookups: Mapping[str, Any]) -> DriverRows:
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.lookups = dict(lookups)
        return clone

    def _field(self, key: str) -> str:
        if key.endswith("__exact"):
            key = key[: -len("__exact")]
        name, _, lookup = key.partition("__")
        if name == "pk":
            name = str(self.model._meta.pk.name)
        if lookup not in ("", "in"):
            raise TypeError(f"rows read through the driver take exact lookups only, not {key!r}")
        return f"{name}__in" if lookup else name

    def filter(self, *args: Any, **kwargs: Any) -> DriverRows:
        given: list[tuple[str, Any]] = []
        for q in args:
            given += _q_lookups(q)
        given += kwargs.items()
        lookups = dict(self.lookups)
        empty = self.empty
        for key, value in given:
            field = self._field(key)
            if field.endswith("__in"):
                value = list(value)
                if field in lookups:
                    value = [v for v in value if any(_same(v, w) for w in lookups[field])]
            elif field in lookups and not _same(lookups[field], value):
                empty = True
            lookups[field] = value
        clone = self._copy(lookups)
        clone.empty = empty
        return clone

    def none(self) -> DriverRows:
        clone = self._copy(self.lookups)
        clone.empty = True
        return clone

    def all(self) -> DriverRows:
        return self._copy(self.lookups)

    _clone = all

    def order_by(self, *fields: str) -> DriverRows:
        return self

    def distinct(self, *fields: str) -> DriverRows:
        return self

    def only(self, *fields: str) -> DriverRows:
        return self

    def using(self, alias: str | None) -> DriverRows:
        return self

    def select_related(self, *fields: str) -> DriverRows:
        return self

    def values_list(self, *fields: str, flat: bool = False) -> DriverValues:
        if flat and len(fields) != 1:
            raise TypeError("values_list(flat=True) takes one field")
        names = [str(self.model._meta.pk.name) if f == "pk" else f for f in fields]
        if flat:
            return DriverValues(self, lambda row: getattr(row, names[0]))
        return DriverValues(self, lambda row: tuple(getattr(row, name) for name in names))

    def rows(self, stop: int | None = None) -> list[Any]:
        return [] if self.empty else self.read(stop)

    def __getitem__(self, index: slice | int) -> Any:
        if isinstance(index, int):
            return self.rows(index + 1)[index]
        if index.step is not None:
            raise TypeError("rows read through the driver take no slice step")
        start = index.start or 0
        return self.rows(index.stop)[start : index.stop]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self.rows())

    def __bool__(self) -> bool:
        return bool(self.rows(1))

    def count(self) -> int:
        return len(self)

    def get(self, **lookups: Any) -> Any:
        found = self.filter(**lookups).rows(2)
        if not found:
            raise self.model.DoesNotExist(f"no {self.model._meta.object_name} matches {lookups}")
        if len(found) > 1:
            raise self.model.MultipleObjectsReturned(f"more than one row matches {lookups}")
        return found[0]

    def exists(self) -> bool:
        return bool(self)


class DriverValues:
    """``values_list`` of :class:`DriverRows`: each row's value(s), in the rows' order."""

    def __init__(self, rows: DriverRows, pick: Callable[[Any], Any], *, distinct: bool = False):
        self.source = rows
        self.pick = pick
        self.unique = distinct

    def distinct(self) -> DriverValues:
        return DriverValues(self.source, self.pick, distinct=True)

    def order_by(self, *fields: str) -> DriverValues:
        return self

    def values(self, stop: int | None = None) -> list[Any]:
        if not self.unique:
            return [self.pick(row) for row in self.source.rows(stop)]
        found = list(dict.fromkeys(self.pick(row) for row in self.source.rows()))
        return found[:stop]

    def __getitem__(self, index: slice) -> list[Any]:
        return self.values(index.stop)[index.start or 0 : index.stop]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values())

    def __len__(self) -> int:
        return len(self.values())


class ListedRows(DriverRows):
    """Rows of a short list the driver answers whole (workers, pauses, crons), read once
    per request and filtered here."""

    def __init__(
        self,
        model: type[models.Model],
        load: Callable[[], Sequence[Any]],
        lookups: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(model, lookups)
        self.load = load
        self.cache: list[list[Any]] = []  # shared by the copies: one read per request

    def read(self, stop: int | None) -> list[Any]:
        if not self.cache:
            self.cache.append(list(self.load()))
        return [row for row in self.cache[0] if matches(row, self.lookups)][:stop]


def filtered_rows(changelist: Any, request: HttpRequest, exclude_parameters: Any = None) -> Any:
    """A changelist's ``get_queryset`` over :class:`DriverRows`: the declared filters, then the
    model admin's search. A URL parameter no filter takes is refused (Django would have turned
    it into an ORM lookup)."""
    (
        changelist.filter_specs,
        changelist.has_filters,
        remaining,
        _,
        changelist.has_active_filters,
    ) = changelist.get_filters(request)
    rows = changelist.root_queryset
    for spec in changelist.filter_specs:
        if exclude_parameters is None or spec.expected_parameters() != exclude_parameters:
            narrowed = spec.queryset(request, rows)
            if narrowed is not None:
                rows = narrowed
    if remaining:
        raise IncorrectLookupParameters(f"unknown filter parameters: {sorted(remaining)}")
    rows, _ = changelist.model_admin.get_search_results(request, rows, changelist.query)
    changelist.clear_all_filters_qs = changelist.get_query_string(
        new_params=remaining, remove=changelist.get_filters_params()
    )
    return rows


class DriverAwareChangeList(ChangeList):
    """Django's changelist, which filters :class:`DriverRows` with :func:`filtered_rows` and a
    ``QuerySet`` as Django does."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> Any:
        if isinstance(self.root_queryset, DriverRows):
            return filtered_rows(self, request, exclude_parameters)
        return super().get_queryset(request, exclude_parameters)
