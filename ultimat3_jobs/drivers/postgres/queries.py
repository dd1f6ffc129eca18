"""The PostgreSQL driver's statements, loaded once from ``sql/*.sql``.

Each statement in a file starts with a ``-- name: <name>`` line and a comment saying why it is
shaped the way it is; the name is also the driver method's and the parity test's. Parameters are
``%(name)s``; time is always the database's ``now()``.

A piece of SQL that several statements share (the job INSERT, the counter upsert) is written once
as a ``-- fragment: <name>`` and used as ``{{name}}``; the loader puts its text in place once, at
import, so the statements that run are whole SQL and a fragment is never run alone. A fragment may
use another; an unknown or unused fragment, or a cycle, refuses to load. A fragment that differs
only by a table, an alias, a column or the fragment it reads names those as parameters,
``-- fragment: <name>(a, b)``, writes them as ``$a`` in its text, and is used as
``{{name(a=x, b=y)}}`` with a plain word for each (a fragment's name inside ``{{$a}}``); a
missing, extra or undeclared parameter refuses to load. Imports nothing of ultimat3-jobs, so the
models' managers can use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import LiteralString, NamedTuple, cast

SQL_DIR = Path(__file__).with_name("sql")
_HEADER = re.compile(r"^-- (name|fragment): ([a-z_]+)(?:\(([a-z_, ]*)\))?\s*$", re.MULTILINE)
PLACEHOLDER = re.compile(r"\{\{([a-z_]+)(?:\(([^(){}]*)\))?\}\}")
_SLOT = re.compile(r"\$([a-z_]+)")
_WORD = re.compile(r"[a-z_][a-z0-9_]*")


class Fragment(NamedTuple):
    """A fragment's parameters (none for most) and its text, with ``$parameter`` slots."""

    params: tuple[str, ...]
    text: str


def parse_parts(text: str, *, source: str) -> tuple[dict[str, str], dict[str, Fragment]]:
    """Split one ``.sql`` file into its named statements and its fragments, unexpanded."""
    parts = _HEADER.split(text)
    if parts[0].strip():
        raise ValueError(f"{source}: text before the first '-- name:' header")
    statements: dict[str, str] = {}
    fragments: dict[str, Fragment] = {}
    for kind, name, params, body in zip(
        parts[1::4], parts[2::4], parts[3::4], parts[4::4], strict=True
    ):
        if name in statements or name in fragments:
            what = "statement" if kind == "name" else "fragment"
            raise ValueError(f"{source}: {what} {name!r} is named twice")
        if kind == "name" and params is not None:
            raise ValueError(f"{source}: statement {name!r} takes no parameters")
        if kind == "name":
            statements[name] = body.strip().rstrip(";")
        else:
            declared = tuple(p.strip() for p in (params or "").split(",") if p.strip())
            fragments[name] = Fragment(declared, _fragment_text(body))
    return statements, fragments


def _fragment_text(body: str) -> str:
    """A fragment without its leading comment lines and its surrounding blank lines."""
    lines = body.strip("\n").splitlines()
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip("\n").rstrip(";").rstrip()


def _bound(name: str, fragment: Fragment, given: str | None, *, source: str) -> str:
    """The fragment's text with each ``$parameter`` replaced by the word ``given`` for it."""
    arguments: dict[str, str] = {}
    for item in (given or "").split(","):
        key, _, value = (part.strip() for part in item.partition("="))
        if not (key or value):
            continue
        if not (_WORD.fullmatch(key) and _WORD.fullmatch(value)) or key in arguments:
            raise ValueError(f"{source}: fragment {name!r} is given {item.strip()!r}")
        arguments[key] = value
    if set(arguments) != set(fragment.params):
        raise ValueError(
            f"{source}: fragment {name!r} takes ({', '.join(fragment.params)}); "
            f"given ({', '.join(arguments)})"
        )

    def slot(match: re.Match[str]) -> str:
        if match.group(1) not in arguments:
            raise ValueError(f"{source}: fragment {name!r} has no parameter ${match.group(1)}")
        return arguments[match.group(1)]

    return _SLOT.sub(slot, fragment.text)


def expand(
    text: str,
    fragments: Mapping[str, Fragment],
    *,
    source: str,
    seen: tuple[str, ...] = (),
    used: set[str] | None = None,
) -> str:
    """Put each ``{{fragment}}`` of ``text`` in place, fragments within fragments included;
    the names placed are added to ``used``."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in fragments:
            raise ValueError(f"{source}: unknown fragment {{{{{name}}}}}")
        if name in seen:
            raise ValueError(f"{source}: fragment {name!r} uses itself")
        if used is not None:
            used.add(name)
        text = _bound(name, fragments[name], match.group(2), source=source)
        return expand(text, fragments, source=source, seen=(*seen, name), used=used)

    return PLACEHOLDER.sub(replace, text)


def parse(text: str, *, source: str) -> dict[str, str]:
    """One ``.sql`` file's named statements as written (``{{fragments}}`` not yet in place)."""
    return parse_parts(text, source=source)[0]


def load(directory: Path = SQL_DIR) -> Mapping[str, LiteralString]:
    """Every file's statements, with fragments from any file expanded in them."""
    raw: dict[str, tuple[str, str]] = {}
    fragments: dict[str, Fragment] = {}
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
    used: set[str] = set()
    statements = {
        name: cast(LiteralString, expand(body, fragments, source=f"{source}: {name}", used=used))
        for name, (source, body) in raw.items()
    }
    if unused := sorted(set(fragments) - used):
        raise ValueError(f"fragments used by no statement: {', '.join(unused)}")
    return MappingProxyType(statements)


STATEMENTS: Mapping[str, LiteralString] = load()
