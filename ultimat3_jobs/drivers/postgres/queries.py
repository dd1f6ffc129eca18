"""The PostgreSQL driver's statements, loaded once from ``sql/*.sql``.

Each statement in a file starts with a ``-- name: <name>`` line and a comment saying why it is
shaped the way it is; the name is also the driver method's and the parity test's. Parameters are
``%(name)s``; time is always the database's ``now()``.

A piece of SQL that several statements share (the job INSERT, the counter upsert) is written once
as a ``-- fragment: <name>`` and used as ``{{name}}``; the loader puts its text in place once, at
import, so the statements that run are whole SQL and a fragment is never run alone. A fragment may
use another; an unknown or unused fragment, or a cycle, refuses to load. Imports nothing of
ultimat3-jobs, so the models' managers can use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import LiteralString, cast

SQL_DIR = Path(__file__).with_name("sql")
_HEADER = re.compile(r"^-- (name|fragment): ([a-z_]+)\s*$", re.MULTILINE)
PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


def parse_parts(text: str, *, source: str) -> tuple[dict[str, str], dict[str, str]]:
    """Split one ``.sql`` file into its named statements and its fragments, unexpanded."""
    parts = _HEADER.split(text)
    if parts[0].strip():
        raise ValueError(f"{source}: text before the first '-- name:' header")
    statements: dict[str, str] = {}
    fragments: dict[str, str] = {}
    for kind, name, body in zip(parts[1::3], parts[2::3], parts[3::3], strict=True):
        if name in statements or name in fragments:
            what = "statement" if kind == "name" else "fragment"
            raise ValueError(f"{source}: {what} {name!r} is named twice")
        target = statements if kind == "name" else fragments
        target[name] = body.strip().rstrip(";") if kind == "name" else _fragment_text(body)
    return statements, fragments


def _fragment_text(body: str) -> str:
    """A fragment without its leading comment lines and its surrounding blank lines."""
    lines = body.strip("\n").splitlines()
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip("\n").rstrip(";").rstrip()


def expand(
    text: str, fragments: Mapping[str, str], *, source: str, seen: tuple[str, ...] = ()
) -> str:
    """Put each ``{{fragment}}`` of ``text`` in place, fragments within fragments included."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in fragments:
            raise ValueError(f"{source}: unknown fragment {{{{{name}}}}}")
        if name in seen:
            raise ValueError(f"{source}: fragment {name!r} uses itself")
        return expand(fragments[name], fragments, source=source, seen=(*seen, name))

    return PLACEHOLDER.sub(replace, text)


def parse(text: str, *, source: str) -> dict[str, str]:
    """One ``.sql`` file's named statements as written (``{{fragments}}`` not yet in place)."""
    return parse_parts(text, source=source)[0]


def load(directory: Path = SQL_DIR) -> Mapping[str, LiteralString]:
    """Every file's statements, with fragments from any file expanded in them."""
    raw: dict[str, tuple[str, str]] = {}
    fragments: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        found, shared = parse_parts(path.read_text(encoding="utf-8"), source=path.name)
        for name, body in found.items():
            if name in raw or name in fragments:
                raise ValueError(f"{path.name}: statement {name!r} is also named elsewhere")
            raw[name] = (path.name, body)
        for name, body in shared.items():
            if name in raw or name in fragments:
                raise ValueError(f"{path.name}: fragment {name!r} is also named elsewhere")
            fragments[name] = body
    used = {
        match.group(1)
        for text in [body for _, body in raw.values()] + list(fragments.values())
        for match in PLACEHOLDER.finditer(text)
    }
    if unused := sorted(set(fragments) - used):
        raise ValueError(f"fragments used by no statement: {', '.join(unused)}")
    statements = {
        name: cast(LiteralString, expand(body, fragments, source=f"{source}: {name}"))
        for name, (source, body) in raw.items()
    }
    return MappingProxyType(statements)


STATEMENTS: Mapping[str, LiteralString] = load()
