"""What an operator may see of a job: the one rule, asked by the admin's job page, its job list
and ``manage.py jobs`` alike.

Layer L4 (processes). The rule fails closed:

* a job name this process declares: its input, progress and result are shown with its
  ``sensitive`` fields and every :data:`SENSITIVE_KEY` redacted, at any depth;
* a job name this process does not know (renamed, declared outside a ``jobs.py``): its input,
  progress and result are redacted whole, since its sensitive fields cannot be known;
* attempt errors: the message and the traceback of every attempt are withheld, whatever the
  job, since exception messages echo inputs (the error class, attempt, worker and time are
  shown);
* the idempotency key of a job that declares ``sensitive`` fields, or of an unknown name, is
  masked (keys are often built from the input).

A viewer with the reveal right (``view_job_input`` in the admin, ``--reveal`` on the command
line) sees everything as stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ultimat3_jobs.model.registry import Registry, registry

REDACTED = "[redacted]"
"""What a redacted value reads as."""

SENSITIVE_KEY = re.compile(r"password|secret|token|api[-_]?key|authorization|cookie|card", re.I)
"""Object keys redacted in every job, at any depth, whatever the job declares: a key that
contains one of these words, in any case (``card_number``, ``X-Api-Key``, ``APIKEY``,
``refresh_token``, ``Authorization``)."""

ERROR_TEXT_FIELDS = ("message", "traceback")
"""The parts of a stored attempt error that may echo input, withheld without the reveal
right."""


def redact(value: Any, fields: Iterable[str] = ()) -> Any:
    """``value`` with the value of every object key that is one of ``fields`` or matches
    :data:`SENSITIVE_KEY` replaced by :data:`REDACTED`, at any depth (inside lists too). The
    value given is not changed."""
    return _redact(value, frozenset(fields))


def _redact(value: Any, named: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if key in named or SENSITIVE_KEY.search(str(key))
            else _redact(item, named)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_redact(item, named) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class Disclosure:
    """What one viewer may see of the jobs of one name (see the module's docstring). Answer
    it with :func:`disclosure`; apply it with its methods, which never change what they are
    given."""

    name: str
    known: bool
    """Whether this process declares (or a resolver answers) the job name."""
    reveal: bool
    """Whether the viewer holds the reveal right: then everything is shown as stored."""
    sensitive: frozenset[str]
    """The input fields the job declares ``sensitive`` (none for an unknown name)."""

    @property
    def payload_whole(self) -> bool:
        """Whether input, progress and result are redacted whole (an unknown name)."""
        return not self.reveal and not self.known

    @property
    def errors_shown(self) -> bool:
        """Whether attempt error messages and tracebacks are shown."""
        return self.reveal

    @property
    def key_shown(self) -> bool:
        """Whether the idempotency key is shown."""
        return self.reveal or (self.known and not self.sensitive)

    @property
    def redacted(self) -> bool:
        """Whether anything at all may have been held back."""
        return not self.reveal

    def payload(self, value: Any) -> Any:
        """An input, progress or result as this viewer may see it. ``None`` (nothing stored)
        stays ``None``."""
        if self.reveal or value is None:
            return value
        if not self.known:
            return REDACTED
        return redact(value, self.sensitive)

    def error(self, error: Any) -> dict[str, Any]:
        """One stored attempt error as a dict, its message and traceback replaced by
        :data:`REDACTED` (where there was one) unless shown."""
        entry = dict(error) if isinstance(error, Mapping) else {"message": str(error)}
        if not self.errors_shown:
            for field in ERROR_TEXT_FIELDS:
                if entry.get(field):
                    entry[field] = REDACTED
        return entry

    def error_message(self, message: str | None) -> str | None:
        """A last error's message, as in a list of jobs."""
        if message and not self.errors_shown:
            return REDACTED
        return message

    def idempotency_key(self, key: str | None) -> str | None:
        """The idempotency key, or :data:`REDACTED` when it is masked (``None`` stays)."""
        if key is None or self.key_shown:
            return key
        return REDACTED


def disclosure(name: str, *, reveal: bool, jobs: Registry = registry) -> Disclosure:
    """What a viewer with (``reveal``) or without the reveal right may see of a job named
    ``name``, as declared in ``jobs`` (the process's registry by default)."""
    handle = jobs.find(name)
    sensitive = frozenset() if handle is None else handle.definition.sensitive
    return Disclosure(name=name, known=handle is not None, reveal=reveal, sensitive=sensitive)


def key_searchable_names(*, reveal: bool, jobs: Registry = registry) -> list[str] | None:
    """The job names whose jobs a search by idempotency key may match for this viewer: every
    name (``None``) with the reveal right; otherwise the declared names whose key is shown, so
    that a search is no oracle for a masked key."""
    if reveal:
        return None
    return [
        definition.name
        for definition in jobs.definitions()
        if disclosure(definition.name, reveal=False, jobs=jobs).key_shown
    ]


def sensitive_fields(name: str, *, jobs: Registry = registry) -> frozenset[str]:
    """The input fields job name ``name`` declares ``sensitive``; none when this process does
    not know that name."""
    return disclosure(name, reveal=False, jobs=jobs).sensitive
