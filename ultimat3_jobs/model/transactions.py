"""Which transactions of the caller an enqueue must follow, and how it follows them.

Layer L3 (job model): reads Django's transaction state through ``django.db.transaction`` only.

The rule: a job enqueued while ``transaction.atomic()`` blocks are open, on any alias, exists only
if every one of those transactions commits. The enqueue takes one of three paths:

- ``STORE``: written to the job store at once. Either no transaction is open, or every open one
  is on an alias the store commits with (the row joins it).
- ``STAGE``: written to ``x_outbox`` on ``OUTBOX_DATABASE``, in the caller's transaction there,
  when that is the only open transaction and the store does not commit with it.
- ``DEFER``: anything else (a transaction open on an alias that neither the store nor the outbox
  shares). The write waits, through ``transaction.on_commit`` on every open alias, until all of
  them have committed, and is dropped if one rolls back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings as django_settings
from django.db import transaction

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import JobOptionInvalid, OutboxNoTransaction

Path = Literal["store", "stage", "defer"]


@dataclass(frozen=True, slots=True)
class Route:
    """Where one enqueue writes, and (for ``defer``) the transactions it waits for."""

    path: Path
    waits_for: tuple[str, ...] = ()


STORE = Route("store")
STAGE = Route("stage")


def open_transactions() -> list[str]:
    """The aliases with a ``transaction.atomic()`` block open in this thread. The blocks a
    Django ``TestCase`` (or pytest-django's ``db``) wraps each test in do not count: they stand
    for autocommit, as Django's own ``durable=True`` check has them."""
    return [
        alias
        for alias in django_settings.DATABASES
        if in_transaction(transaction.get_connection(alias))
    ]


def in_transaction(connection: Any) -> bool:
    """Whether ``connection`` is inside an ``atomic()`` block that is not a test case's."""
    return connection.in_atomic_block and not all(
        getattr(block, "_from_testcase", False) for block in connection.atomic_blocks
    )


def route(driver: JobDriver, *, publish: str, outbox_database: str) -> Route:
    """Decide where an enqueue writes (see the module's docstring). ``publish="now"`` always
    writes the store at once; ``publish="staged"`` needs a transaction on ``outbox_database``."""
    if publish not in ("on-commit", "now", "staged"):
        raise JobOptionInvalid(
            f"publish must be 'on-commit', 'now' or 'staged'; got {publish!r}",
            field="publish",
            rule="publish-mode",
        )
    if publish == "now":
        return STORE
    open_aliases = open_transactions()
    if publish == "staged" and outbox_database not in open_aliases:
        raise OutboxNoTransaction(
            f"publish='staged' needs an open transaction.atomic(using={outbox_database!r}) to "
            "hold the staged job; there is none here. Enqueue inside the transaction, or use "
            "publish='on-commit' (the default)."
        )
    if publish == "on-commit" and all(driver.commits_with(alias) for alias in open_aliases):
        return STORE
    if open_aliases == [outbox_database]:
        return STAGE
    return Route("defer", tuple(open_aliases))


class AfterCommits:
    """Runs ``action`` once every transaction in ``aliases`` has committed: one
    ``transaction.on_commit`` callback per alias. A rolled-back block (or savepoint) drops its
    callback, so the action then never runs."""

    def __init__(self, aliases: Iterable[str], action: Callable[[], object]) -> None:
        self._waiting = set(aliases)
        self._action = action
        for alias in sorted(self._waiting):
            transaction.on_commit(functools.partial(self._committed, alias), using=alias)

    def _committed(self, alias: str) -> None:
        self._waiting.discard(alias)
        if not self._waiting:
            self._action()
