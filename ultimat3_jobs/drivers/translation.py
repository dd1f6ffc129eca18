"""How a concrete driver speaks the seam's errors, never its store client's: a block or every
public method of a class runs inside :meth:`SeamTranslation.translated`, which raises the seam's
error (``DriverUnavailable``, ``StoreRefused``) in place of a client error, chained to it.

Each driver says which client errors it translates and how (its ``seam_error``); the wrapping is
written here once.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from ultimat3_jobs.errors import DriverUnavailable, StoreRefused


def first_line(exc: BaseException) -> str:
    """The first line of an error's text, stripped: never the detail lines that can quote data."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else ""


class SeamTranslation:
    """The seam's error, from ``seam_error``, in place of any of ``errors`` (the client's)."""

    def __init__(
        self,
        errors: tuple[type[BaseException], ...],
        seam_error: Callable[[BaseException], DriverUnavailable | StoreRefused],
    ) -> None:
        self.errors = errors
        self.seam_error = seam_error

    @contextlib.contextmanager
    def translated(self) -> Iterator[None]:
        """Raise the seam's error in place of a client error raised inside the block."""
        try:
            yield
        except self.errors as exc:
            raise self.seam_error(exc) from exc

    def _translating(self, method: Callable[..., Any]) -> Callable[..., Any]:
        # The same as running inside translated(), without a context manager made per call:
        # a driver method is called once per statement, a step's write included.
        errors, seam_error = self.errors, self.seam_error

        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return method(*args, **kwargs)
            except errors as exc:
                raise seam_error(exc) from exc

        return call

    def speaks_seam_errors[C: type](self, cls: C) -> C:
        """Class decorator: every public method ``cls`` defines runs inside :meth:`translated`
        (a generator or a coroutine would escape it, so one is refused)."""
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not inspect.isfunction(member):
                continue
            if inspect.isgeneratorfunction(member) or inspect.iscoroutinefunction(member):
                raise TypeError(f"{cls.__name__}.{name}: only plain methods can be translated")
            setattr(cls, name, self._translating(member))
        return cls
