"""The input check of a job's body signature, compiled once per signature.

Layer L3 (job model). A body takes the job context first and its input as keyword arguments.
Whether an input binds is, for almost every body, a question of names: the required ones are
there, and no other is (unless the body takes ``**kwargs``). That question is answered from sets
computed once; only a refusal, or a signature of an unusual shape (positional-only parameters
after the context, a context that cannot be passed positionally), asks
``inspect.Signature.bind``, so its message is the refusal's.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ultimat3_jobs.errors import JobInputInvalid

_P = inspect.Parameter


@dataclass(frozen=True, slots=True)
class InputShape:
    """The names an input may and must have. ``allowed`` is ``None`` for a body that takes
    ``**kwargs``; ``forbidden`` is the context parameter's name when a keyword could also
    fill it."""

    required: frozenset[str]
    allowed: frozenset[str] | None
    forbidden: frozenset[str]

    def admits(self, input: Mapping[str, Any]) -> bool:
        """True when ``signature.bind(None, **input)`` would succeed."""
        keys = input.keys()
        if self.allowed is not None:
            return self.required <= keys and keys <= self.allowed
        if not self.required <= keys or not self.forbidden.isdisjoint(keys):
            return False
        return all(type(key) is str for key in keys)


def shape_of(signature: inspect.Signature) -> InputShape | None:
    """The shape of a body's signature, or ``None`` when only ``bind`` can tell."""
    params = list(signature.parameters.values())
    if not params or params[0].kind not in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
        return None
    first, rest = params[0], params[1:]
    required: set[str] = set()
    named: set[str] = set()
    var_keyword = False
    for param in rest:
        if param.kind is _P.POSITIONAL_ONLY:
            return None
        if param.kind is _P.VAR_POSITIONAL:
            continue
        if param.kind is _P.VAR_KEYWORD:
            var_keyword = True
            continue
        named.add(param.name)
        if param.default is _P.empty:
            required.add(param.name)
    forbidden = frozenset({first.name} if first.kind is _P.POSITIONAL_OR_KEYWORD else ())
    return InputShape(
        required=frozenset(required),
        allowed=None if var_keyword else frozenset(named),
        forbidden=forbidden,
    )


_shapes: dict[int, tuple[inspect.Signature, InputShape | None]] = {}
_shapes_lock = threading.Lock()


def _compiled(signature: inspect.Signature) -> InputShape | None:
    found = _shapes.get(id(signature))
    if found is not None and found[0] is signature:
        return found[1]
    shape = shape_of(signature)
    with _shapes_lock:
        # The signature is kept beside its shape, so its id is never reused while cached.
        _shapes[id(signature)] = (signature, shape)
    return shape


def admitted(signature: inspect.Signature, input: Mapping[str, Any]) -> bool:
    """Whether the compiled shape alone admits ``input`` (``False``: only ``bind`` can tell)."""
    shape = _compiled(signature)
    return shape is not None and shape.admits(input)


def check_signature(
    signature: inspect.Signature | None, input: Mapping[str, Any], *, where: str
) -> None:
    """Refuse input that does not bind to the body's keyword parameters (``where`` names the
    body in the message)."""
    if signature is None:
        return
    if admitted(signature, input):
        return
    try:
        signature.bind(None, **input)
    except TypeError as exc:
        raise JobInputInvalid(
            f"input does not match {where}{signature}: {exc}",
            field="input",
            rule="signature",
        ) from None


def input_check(
    signature: inspect.Signature | None, *, where: str
) -> Callable[[Mapping[str, Any]], None]:
    """:func:`check_signature` for one signature, its shape looked up once: the check each
    input of a batch makes."""
    if signature is None:
        return _admit_any
    shape = _compiled(signature)
    if shape is None:
        return lambda input: check_signature(signature, input, where=where)
    admits = shape.admits

    def check(input: Mapping[str, Any]) -> None:
        if not admits(input):
            check_signature(signature, input, where=where)

    return check


def _admit_any(input: Mapping[str, Any]) -> None:
    """The check of a job without a body signature: every input binds."""
