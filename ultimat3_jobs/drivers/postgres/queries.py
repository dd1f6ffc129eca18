"""The PostgreSQL driver's statements, loaded once from ``sql/*.sql``.

Each statement in a file starts with a ``-- name: <name>`` line and a comment saying why it is
shaped the way it is; the name is also the driver method's and the parity test's. Parameters are
``%(name)s``; time is always the database's ``now()``. Imports nothing of ultimat3-jobs, so the
models' managers can use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import LiteralString, cast

SQL_DIR = Path(__file__).with_name("sql")
_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


def parse(text: str, *, source: str) -> dict[str, LiteralString]:
    """Split one ``.sql`` file into its named statements."""
    parts = _HEADER.split(text)
    if parts[0].strip():
        raise ValueError(f"{source}: text before the first '-- name:' header")
    found: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"{source}: statement {name!r} is named twice")
        found[name] = cast(LiteralString, body.strip().rstrip(";"))
    return found


def load(directory: Path = SQL_DIR) -> Mapping[str, LiteralString]:
    statements: dict[str, LiteralString] = {}
    for path in sorted(directory.glob("*.sql")):
        for name, body in parse(path.read_text(encoding="utf-8"), source=path.name).items():
            if name in statements:
                raise ValueError(f"{path.name}: statement {name!r} is also named elsewhere")
            statements[name] = body
    return MappingProxyType(statements)


STATEMENTS: Mapping[str, LiteralString] = load()
