"""The roots of every error ultimat3-jobs raises: ``JobsError`` (a refusal, with its stable
``X_*`` code) and ``Terminal`` (a job outcome), and the outcome whose text starts with its code.

Layer L1 (core): the standard library only. ``errors`` (the whole tree, the one place to import
from) and ``errors_features`` (the errors of the features built on jobs) build on these.
"""

from __future__ import annotations

from typing import Any, ClassVar


class JobsError(Exception):
    """ultimat3-jobs refused the operation."""

    code: ClassVar[str] = "X_JOBS"

    def __init__(self, message: str | None = None, **context: Any) -> None:
        self.message = message or (type(self).__doc__ or "").strip().splitlines()[0]
        self.context = context
        super().__init__(f"{self.code}: {self.message}")


class Terminal(Exception):
    """Raised by a job's body to fail the job at once, without further retries."""

    code: ClassVar[str] = "X_JOB_TERMINAL"


class CodedOutcome(Exception):
    """A job outcome whose text starts with its code, as a refusal's does."""

    code: ClassVar[str]

    def __str__(self) -> str:
        return f"{self.code}: {super().__str__()}"


# Every error is known by its place in ``ultimat3_jobs.errors`` (the recorded ``error_class`` of
# a failed attempt, a pickled error): that name stays, wherever the class is defined.
for _cls in (JobsError, Terminal, CodedOutcome):
    _cls.__module__ = "ultimat3_jobs.errors"
