"""The Redis driver's scripts and its one way to run them.

Each operation is one Lua script, ``lua/<operation>.lua``, run with the shared prelude
``lua/_lib.lua`` in front of it. A script is called by its SHA (``EVALSHA``) and loaded only when
Redis answers that it does not know it (``NOSCRIPT``: the first call, or after a restart or a
``SCRIPT FLUSH``), then called again.

Errors are the seam's, never the client's: a connection refused, dropped or timed out raises
:class:`~ultimat3_jobs.errors.DriverUnavailable` at once (the worker backs off and calls
again); an error Redis answers to a script raises :class:`~ultimat3_jobs.errors.StoreRefused`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from redis import exceptions as redis_errors

from ultimat3_jobs.errors import DriverUnavailable, StoreRefused

LUA_DIR = Path(__file__).resolve().parent / "lua"
PRELUDE = "_lib"

UNREACHABLE: tuple[type[BaseException], ...] = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ReadOnlyError,
)
"""What says Redis could not be reached (or cannot take writes now), not that it refused data."""


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip()[:300] if lines else ""


def seam_error(exc: BaseException) -> DriverUnavailable | StoreRefused:
    """The seam's error for an error of the Redis client."""
    reason = f"{type(exc).__name__}: {_first_line(exc)}"
    if isinstance(exc, UNREACHABLE):
        return DriverUnavailable(f"the job store (Redis) cannot be reached: {reason}")
    return StoreRefused(reason=reason)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """Raise the seam's error in place of a Redis client error raised inside the block."""
    try:
        yield
    except redis_errors.RedisError as exc:
        raise seam_error(exc) from exc


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with translated():
            return method(*args, **kwargs)

    return call


def speaks_seam_errors[C: type](cls: C) -> C:
    """Class decorator: every public method ``cls`` defines runs inside :func:`translated`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        setattr(cls, name, _translating(member))
    return cls


class Scripts:
    """Every operation's script, read once; :meth:`run` calls one by name."""

    def __init__(self) -> None:
        prelude = (LUA_DIR / f"{PRELUDE}.lua").read_text(encoding="utf-8")
        self.texts: dict[str, str] = {}
        self.shas: dict[str, str] = {}
        for path in sorted(LUA_DIR.glob("*.lua")):
            if path.stem == PRELUDE:
                continue
            source = f"{prelude}\n{path.read_text(encoding='utf-8')}"
            self.texts[path.stem] = source
            self.shas[path.stem] = hashlib.sha1(source.encode("utf-8")).hexdigest()

    def run(self, client: Any, name: str, base: str, args: Sequence[Any] = ()) -> Any:
        """Run the script ``name`` on the store whose base key is ``base``."""
        sha = self.shas[name]
        try:
            return client.evalsha(sha, 1, base, *args)
        except redis_errors.NoScriptError:
            client.script_load(self.texts[name])
            return client.evalsha(sha, 1, base, *args)


SCRIPTS = Scripts()
