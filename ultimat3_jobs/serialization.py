"""JSON-only encoding of job input, with a refusal that names the field and the rule.

Layer L1 (core): imports the standard library and earlier L1 modules.

Input is stored as ``jsonb``: what cannot make that trip unchanged is refused before anything is
written, rather than altered silently (a tuple would come back a list, an integer key a string).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from ultimat3_jobs.errors import JobInputInvalid

INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
NULL_JSON = "null"
"""The JSON text of ``None``, what most bodies return."""


def none_json(max_bytes: int) -> str | None:
    """The JSON text of ``None`` without an encoder, or ``None`` when even it is over
    ``max_bytes`` (the encoder then refuses it)."""
    return NULL_JSON if max_bytes >= len(NULL_JSON) else None


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if key.isidentifier():
        return f"{parent}.{key}"
    return f"{parent}[{json.dumps(key, ensure_ascii=True)}]"


def _check_string(path: str, value: str) -> None:
    if "\x00" in value:
        raise JobInputInvalid(
            f"{path}: strings may not contain the NUL character (\\u0000); PostgreSQL's jsonb "
            "cannot store it",
            field=path,
            rule="no-nul",
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JobInputInvalid(
            f"{path}: strings must be valid Unicode; a lone surrogate "
            f"({value[exc.start]!a}) is at position {exc.start}",
            field=path,
            rule="valid-unicode",
        ) from None


def _float_text(value: float) -> str:
    """A float as JSON text that ``jsonb`` gives back as a float: ``jsonb`` prints a number
    written with a positive exponent (``1e+16``) without one (``10000000000000000``), which a
    reader parses as an int, so such floats are written out positionally with a fraction."""
    text = repr(value)
    if "e+" not in text:
        return text
    positional = format(Decimal(text), "f")
    return positional if "." in positional else positional + ".0"


def _encode_slow(value: Any) -> str:
    # Only for values holding a float with a positive exponent; the fast path is json.dumps.
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dict):
        items = (f"{_encode_slow(key)}:{_encode_slow(child)}" for key, child in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_encode_slow(child) for child in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def check_json(value: Any, *, root: str = "input", max_depth: int) -> bool:
    """Refuse ``value`` unless it survives a JSON round trip through ``jsonb`` unchanged.

    Allowed: ``None``, ``bool``, ``int`` within 64 bits, finite ``float``, ``str`` (valid
    Unicode, no NUL), ``list``, and ``dict`` with ``str`` keys, nested at most ``max_depth``
    containers deep. Raises :class:`JobInputInvalid` naming the first offending field.
    Answers whether the value holds a float that needs :func:`_float_text`.
    """
    exponent_floats = False
    stack: list[tuple[str, Any, int]] = [(root, value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, str):
            _check_string(path, item)
        elif isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                raise JobInputInvalid(
                    f"{path}: integers must lie within the signed 64-bit range "
                    "(-2**63 .. 2**63-1) to survive a JSON round trip; pass a larger one as a "
                    "string",
                    field=path,
                    rule="int-range",
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JobInputInvalid(
                    f"{path}: numbers must be finite; {item!r} is not valid JSON",
                    field=path,
                    rule="finite-number",
                )
            if abs(item) >= 1e16:
                exponent_floats = True
        elif isinstance(item, (dict, list)):
            if depth >= max_depth:
                raise JobInputInvalid(
                    f"{path}: nesting is deeper than INPUT_MAX_DEPTH ({max_depth})",
                    field=path,
                    rule="max-depth",
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise JobInputInvalid(
                            f"{path}: object keys must be strings; {key!r} "
                            f"({type(key).__name__}) would come back as a string",
                            field=path,
                            rule="string-keys",
                        )
                    _check_string(f"{path} key {key!a}", key)
                    stack.append((_path(path, key), child, depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((_path(path, index), child, depth + 1))
        else:
            kind = type(item)
            hints: dict[type, str] = {
                tuple: "a tuple would come back as a list; pass a list",
                set: "pass a sorted list",
                frozenset: "pass a sorted list",
                bytes: "pass text, or base64-encode binary data",
                bytearray: "pass text, or base64-encode binary data",
            }
            hint = hints.get(
                kind, "pass its JSON form (for example str() of a UUID or .isoformat())"
            )
            raise JobInputInvalid(
                f"{path}: {kind.__module__}.{kind.__qualname__} is not a JSON value; {hint}",
                field=path,
                rule="json-type",
            )
    return exponent_floats


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""The encoder of flat objects, made once (``json.dumps`` with options makes one per call)."""

_STRICT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""The encoder of any other checked value, made once for the same reason."""


def _flat_text(value: Any, max_depth: int) -> str | None:
    """The compact JSON text of ``None``, a ``bool``, or a flat object (``str`` keys; ``str``,
    ``bool``, ``None``, 64-bit ``int`` and finite ``float`` values below ``1e16``), checked in
    the same pass that decides it is flat; ``None`` for anything else, and for anything the
    full check might refuse (a string with NUL or a lone surrogate), which then takes the path
    of :func:`check_json` and its message. Most job input is such an object; most step results
    and job results are ``None`` or one."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is not dict or max_depth < 1:
        return None
    for key, item in value.items():
        if type(key) is not str:
            return None
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not INT_MIN <= item <= INT_MAX:
                return None
        elif kind is float:
            if not abs(item) < 1e16:  # also NaN and the infinities
                return None
        else:
            return None
    if not value:
        return "{}"
    text = _COMPACT.encode(value)
    # NUL is written escaped; a lone surrogate fails the UTF-8 encoding of the size check.
    return None if "\\u0000" in text else text


def encode_json(value: Any, *, root: str = "input", max_depth: int, max_bytes: int) -> str:
    """The compact JSON text of ``value`` after :func:`check_json`; refused when its UTF-8 form
    is longer than ``max_bytes``. A flat object is checked and written in one pass; ``None``
    (what most bodies return) costs no encoder."""
    if value is None and (text := none_json(max_bytes)) is not None:
        return text
    flat = _flat_text(value, max_depth)
    if flat is not None:
        if flat.isascii():  # its UTF-8 form is as long, with no copy made to count it
            size = len(flat)
        else:
            try:
                size = len(flat.encode("utf-8"))
            except UnicodeEncodeError:
                size = -1
        if 0 <= size <= max_bytes:
            return flat
    if check_json(value, root=root, max_depth=max_depth):
        text = _encode_slow(value)
    else:
        text = _STRICT.encode(value)
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise JobInputInvalid(
            f"{root}: its JSON form is {size} bytes, over INPUT_MAX_BYTES ({max_bytes})",
            field=root,
            rule="max-bytes",
        )
    return text


def decode_json(text: str | bytes | None) -> Any:
    """Parse JSON text as a driver stored it (``None`` stays ``None``). The empty object,
    the input of every job called without arguments, skips the parser (a new dict each time:
    the caller may change it)."""
    if text is None:
        return None
    if text == "{}":
        return {}
    return json.loads(text)
