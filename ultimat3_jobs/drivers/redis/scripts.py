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

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redis import exceptions as redis_errors

from ultimat3_jobs.drivers.translation import SeamTranslation, first_line
from ultimat3_jobs.errors import DriverUnavailable, StoreRefused

LUA_DIR = Path(__file__).resolve().parent / "lua"
PRELUDE = "_lib"

UNREACHABLE: tuple[type[BaseException], ...] = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.ReadOnlyError,
)
"""What says Redis could not be reached (or cannot take writes now), not that it refused data."""


def seam_error(exc: BaseException) -> DriverUnavailable | StoreRefused:
    """The seam's error for an error of the Redis client."""
    reason = f"{type(exc).__name__}: {first_line(exc)[:300]}"
    if isinstance(exc, UNREACHABLE):
        return DriverUnavailable(f"the job store (Redis) cannot be reached: {reason}")
    return StoreRefused(reason=reason)


_TRANSLATION = SeamTranslation((redis_errors.RedisError,), seam_error)

translated = _TRANSLATION.translated
"""Raise the seam's error in place of a Redis client error raised inside the block."""

speaks_seam_errors = _TRANSLATION.speaks_seam_errors
"""Class decorator: every public method a class defines runs inside :func:`translated`."""


class Scripts:
    """Every operation's script, read at its first call (a worker runs a dozen of the sixty:
    reading and hashing them all, each behind the prelude, cost every process's start about
    35 million instructions); :meth:`run` calls one by name."""

    def __init__(self) -> None:
        self._prelude: str | None = None
        self.texts: dict[str, str] = {}
        self.shas: dict[str, str] = {}

    def sha(self, name: str) -> str:
        """The SHA of the script ``name``, its text read and kept on the first ask (two threads
        asking at once both read it, to the same text)."""
        sha = self.shas.get(name)
        if sha is not None:
            return sha
        path = LUA_DIR / f"{name}.lua"
        if name == PRELUDE or not path.is_file():
            raise KeyError(f"no Redis script named {name!r} in {LUA_DIR}")
        if self._prelude is None:
            self._prelude = (LUA_DIR / f"{PRELUDE}.lua").read_text(encoding="utf-8")
        source = f"{self._prelude}\n{path.read_text(encoding='utf-8')}"
        self.texts[name] = source
        sha = self.shas[name] = hashlib.sha1(source.encode("utf-8")).hexdigest()
        return sha

    def run(self, client: Any, name: str, base: str, args: Sequence[Any] = ()) -> Any:
        """Run the script ``name`` on the store whose base key is ``base``."""
        sha = self.sha(name)
        try:
            return client.evalsha(sha, 1, base, *args)
        except redis_errors.NoScriptError:
            client.script_load(self.texts[name])
            return client.evalsha(sha, 1, base, *args)


SCRIPTS = Scripts()
