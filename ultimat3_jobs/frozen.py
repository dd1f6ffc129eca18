"""A faster ``__init__`` for the frozen slotted records built once or more per job.

Layer L1 (core): the standard library only.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__(self,
"name", value)``: a global and an attribute looked up, then a search of the class's MRO for the
name, per field. :func:`quick_init` swaps it for one with the same signature (positional and
keyword-only fields, defaults) that calls each slot's own descriptor, found once when the class
is made. The record stays frozen: assignment after ``__init__`` still raises.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any


def quick_init[T](cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets its slots directly.
    Refuses (``TypeError``) a class it cannot mirror exactly: one with a ``__post_init__``, a
    default factory, a field left out of ``__init__``, or no slots."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__qualname__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__qualname__} has a __post_init__")
    names: dict[str, Any] = {}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in fields(cls):  # type: ignore[arg-type]
        if not field.init or field.default_factory is not MISSING:
            raise TypeError(f"{cls.__qualname__}.{field.name}: not set from a plain argument")
        param = field.name
        if field.default is not MISSING:
            names[f"_default_{field.name}"] = field.default
            param = f"{field.name}=_default_{field.name}"
        (keyword if field.kw_only else positional).append(param)
        names[f"_set_{field.name}"] = getattr(cls, field.name).__set__
        body.append(f"    _set_{field.name}(self, {field.name})")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}) -> None:\n" + ("\n".join(body) or "    pass") + "\n"
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls
