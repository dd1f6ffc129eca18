"""pytest fixtures for projects that use ultimat3-jobs, registered by the package's ``pytest11``
entry point (or ``pytest_plugins = ["ultimat3_jobs.testing.pytest_plugin"]``).

``jobs``
    A :class:`~ultimat3_jobs.testing.Jobs`: ``jobs.assert_enqueued(...)``, ``jobs.run()``,
    ``jobs.travel(60)``, ``jobs.fire_cron(at)`` ...
``jobs_eager``
    Eager mode for the whole test (:func:`~ultimat3_jobs.testing.eager_jobs`); answers its
    :class:`~ultimat3_jobs.testing.EagerJobs`.

The ini option ``ultimat3_jobs_eager = true`` (``[tool.pytest.ini_options]`` in pyproject.toml)
puts every test in eager mode, as if each one asked for ``jobs_eager``.

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

EAGER_INI = "ultimat3_jobs_eager"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        EAGER_INI,
        type="bool",
        default=False,
        help="ultimat3-jobs: run each enqueued job once its transaction commits, in every test "
        "(the jobs_eager fixture everywhere)",
    )


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


@pytest.fixture(autouse=True)
def _ultimat3_jobs_eager_everywhere(request: pytest.FixtureRequest) -> None:
    """``jobs_eager`` for every test when the ini option asks for it; nothing otherwise."""
    if request.config.getini(EAGER_INI):
        request.getfixturevalue("jobs_eager")
