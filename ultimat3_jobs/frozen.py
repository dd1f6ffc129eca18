"""A faster ``__init__`` for the frozen slotted records built once or more per job.

Layer L1 (core): the standard library only.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__(self,
"name", value)``: a global and an attribute looked up, then a search of the class's MRO for the
name, per field. :func:`quick_init` swaps it for one with the same signature (positional and
keyword-only fields, defaults) that calls each slot's own descriptor, found once when the class
is made. The record stays frozen: assignment after ``__init__`` still raises.

Where a record is built once per job, :func:`quick_new` gives the cheaper way still: a function
of the same signature that builds it unfrozen, as an instance of a twin class with the same
slots (each field a plain slot store), and then makes it the record (``__class__``, which the
layouts permit). A call of the class itself passes its keywords as a new dict and runs
``__new__`` and ``__init__`` apart; each descriptor call builds an argument tuple. A record of
seven to ten fields took about 13,700 instructions (callgrind), built this way about 5,200.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any

_BUILDERS: dict[type, Callable[..., Any]] = {}


def quick_init[T](cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets its slots directly.
    Refuses (``TypeError``) a class it cannot mirror exactly: one with a ``__post_init__``, a
    default factory, a field left out of ``__init__``, or no slots."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__qualname__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__qualname__} has a __post_init__")
    if cls.__bases__ != (object,):
        raise TypeError(f"{cls.__qualname__} derives from a class: its slots have no twin")
    twin = type(f"{cls.__name__}Fields", (), {"__slots__": vars(cls)["__slots__"]})
    twin().__class__ = cls  # the layouts agree (else ``TypeError`` now, not per record)
    names: dict[str, Any] = {"_Twin": twin, "_cls": cls}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    stores: list[str] = []
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
        stores.append(f"    self.{field.name} = {field.name}")
    params = ", ".join([*positional, *(["*", *keyword] if keyword else [])])
    source = (
        f"def __init__(self{', ' if params else ''}{params}) -> None:\n"
        + ("\n".join(body) or "    pass")
        + f"\ndef build({params}):\n    self = _Twin()\n"
        + "".join(line + "\n" for line in stores)
        + "    self.__class__ = _cls\n    return self\n"
    )
    exec(compile(source, f"<quick_init {cls.__qualname__}>", "exec"), names)
    _BUILDERS[cls] = names["build"]
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls


def quick_new[T](cls: type[T]) -> Callable[..., T]:
    """The function that builds a :func:`quick_init` record ``cls`` (the class's signature and
    defaults, the same record), for the records built once per job (see the module's
    docstring)."""
    return _BUILDERS[cls]
