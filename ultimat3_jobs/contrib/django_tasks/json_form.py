"""The JSON form of a Django task's arguments and return value. Layer L5 (Django surface).

Django's ``TaskResult`` normalises arguments (a tuple becomes a list), and a stored value comes
back from ``jsonb`` with string keys. So the backend stores, and answers at once, what a JSON round
trip would give back: sequences become lists and mappings dicts whose keys take their JSON text.
Values JSON cannot carry (sets, bytes, NaN, other objects) are left as they are, for the job
input and result checks to refuse with their usual message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ultimat3_jobs.errors import JobInputInvalid

# Deeper than INPUT_MAX_DEPTH can be (256): what lies below is left for that check to refuse,
# and the recursion stays far from Python's limit.
_MAX_DEPTH = 260
_BINARY = (bytes, bytearray, memoryview)


def json_form(value: Any, path: str) -> Any:
    """``value`` as a JSON round trip gives it back; ``path`` names it in a refusal
    (``input.args``). Raises :class:`JobInputInvalid` for a key JSON cannot write, or for two
    keys with the same JSON text (``1`` and ``"1"``)."""
    return _form(value, path, 0)


def _form(value: Any, path: str, depth: int) -> Any:
    if depth > _MAX_DEPTH or isinstance(value, (str, *_BINARY)):
        return value
    if isinstance(value, Mapping):
        converted: dict[str, Any] = {}
        for key, child in value.items():
            text = _key_text(key, path)
            if text in converted:
                raise JobInputInvalid(
                    f"{path}: two keys become {text!r} in JSON; keep one of them",
                    field=path,
                    rule="duplicate-key",
                )
            converted[text] = _form(child, _child_path(path, text), depth + 1)
        return converted
    if isinstance(value, Sequence):
        return [_form(child, f"{path}[{index}]", depth + 1) for index, child in enumerate(value)]
    return value


def _key_text(key: Any, path: str) -> str:
    """The text ``json.dumps`` writes for a key."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float) and math.isfinite(key):
        return float.__repr__(key)
    raise JobInputInvalid(
        f"{path}: object keys must be strings, numbers, booleans or None; "
        f"{key!r:.80} ({type(key).__name__}) has no JSON form",
        field=path,
        rule="string-keys",
    )


def _child_path(parent: str, key: str) -> str:
    if key.isidentifier():
        return f"{parent}.{key}"
    return f"{parent}[{json.dumps(key, ensure_ascii=True)}]"
