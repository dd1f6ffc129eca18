"""pytest fixtures for projects that use ultimat3-jobs, registered by the package's ``pytest11``
entry point (or ``pytest_plugins = ["ultimat3_jobs.testing.pytest_plugin"]``).

``jobs``
    A :class:`~ultimat3_jobs.testing.Jobs`: ``jobs.assert_enqueued(...)``, ``jobs.run()``,
    ``jobs.travel(60)``, ``jobs.fire_cron(at)`` ...
``jobs_eager``
    Eager mode for the whole test (:func:`~ultimat3_jobs.testing.eager_jobs`); answers its
    :class:`~ultimat3_jobs.testing.EagerJobs`.

With the ``postgres`` driver the test needs the database as usual (``@pytest.mark.django_db``
or the ``db`` fixture); these fixtures do not ask for it, so that the memory driver needs none.

This module is imported by every pytest run of a project that installs the package, Django or
not: it imports nothing of the package until a fixture is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest


def _testing() -> Any:
    # Loaded when a fixture runs: by then pytest-django has set Django up.
    return importlib.import_module("ultimat3_jobs.testing")


@pytest.fixture
def jobs() -> Any:
    """The test helpers of :mod:`ultimat3_jobs.testing` as one object."""
    return _testing().Jobs()


@pytest.fixture
def jobs_eager(jobs: Any) -> Iterator[Any]:
    """Each enqueue of the test runs its job once its transaction commits."""
    with jobs.eager() as eager:
        yield eager
