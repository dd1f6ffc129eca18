"""One record built from another: the fields the two name alike pass over as they are.

Layer L1 (core): the standard library only.

A record made from another (a request from a batch's shared columns, a row from a request, an
admin row from a driver's record) would otherwise spell ``name=source.name`` once per field, at
each place; :func:`carry` writes that rule once, so a field added to both records flows through.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any


def carried(source: object, target: Callable[..., Any]) -> dict[str, Any]:
    """The fields of the dataclass ``source`` that ``target`` takes by the same name, by name:
    each ``init`` field of a dataclass ``target``; of any other class, each name it has as a
    class attribute (a Django model's fields)."""
    return {name: getattr(source, name) for name in _names(type(source), target)}


def carry[T](target: Callable[..., T], source: object, /, **given: Any) -> T:
    """``target`` built from :func:`carried` fields of ``source``, with ``given`` set over them
    (the fields named otherwise, and those computed here)."""
    return target(**(carried(source, target) | given))


_NAMES: dict[tuple[type, Callable[..., Any]], tuple[str, ...]] = {}
"""The names each (source type, target) pair carries, found once."""


def _names(source: type, target: Callable[..., Any]) -> tuple[str, ...]:
    names = _NAMES.get((source, target))
    if names is None:
        names = _NAMES[(source, target)] = _shared_names(source, target)
    return names


def _shared_names(source: type, target: Callable[..., Any]) -> tuple[str, ...]:
    if not is_dataclass(source):
        raise TypeError(f"{source.__qualname__} is not a dataclass")
    if is_dataclass(target):
        taken = {field.name for field in fields(target) if field.init}
        return tuple(field.name for field in fields(source) if field.name in taken)
    return tuple(field.name for field in fields(source) if hasattr(target, field.name))
