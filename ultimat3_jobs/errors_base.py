"""The roots of every error ultimat3-jobs raises: ``JobsError`` (a refusal, with its stable
``X_*`` code) and ``Terminal`` (a job outcome), and the outcome whose text starts with its code.

Layer L1 (core): the standard library only. ``errors`` (the whole tree, the one place to import
from) and ``errors_features`` (the errors of the features built on jobs) build on these.
"""

from __future__ import annotations

from typing import Any, ClassVar


class _Coded:
    """A class keyword, ``code="X_..."``, declares an error's stable code beside its name."""

    code: ClassVar[str]

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code


class JobsError(_Coded, Exception):
    """ultimat3-jobs refused the operation.

    A refusal that carries named context declares it with the class keyword ``fields`` (each
    name with its default): each is then a keyword-only argument, kept as an attribute and in
    ``context``, and no other keyword is taken.
    """

    code: ClassVar[str] = "X_JOBS"
    fields: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, *, fields: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if fields is not None:
            cls.fields = {**cls.fields, **fields}

    def __init__(self, message: str | None = None, **context: Any) -> None:
        if self.fields:
            unknown = sorted(set(context) - set(self.fields))
            if unknown:
                raise TypeError(f"{type(self).__name__} takes no keyword {unknown[0]!r}")
            context = {**self.fields, **context}
            for name, value in context.items():
                setattr(self, name, value)
        self.message = message or (type(self).__doc__ or "").strip().splitlines()[0]
        self.context = context
        super().__init__(f"{self.code}: {self.message}")


class Terminal(_Coded, Exception):
    """Raised by a job's body to fail the job at once, without further retries."""

    code: ClassVar[str] = "X_JOB_TERMINAL"


class CodedOutcome(_Coded, Exception):
    """A job outcome whose text starts with its code, as a refusal's does."""

    def __str__(self) -> str:
        return f"{self.code}: {super().__str__()}"


# Every error is known by its place in ``ultimat3_jobs.errors`` (the recorded ``error_class`` of
# a failed attempt, a pickled error): that name stays, wherever the class is defined.
for _cls in (JobsError, Terminal, CodedOutcome):
    _cls.__module__ = "ultimat3_jobs.errors"
