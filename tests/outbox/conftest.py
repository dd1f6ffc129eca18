"""Fixtures of the outbox tests: the other job store, and the subprocesses a test starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from tests.outbox.processes import Processes
from tests.support.processes import owned

OTHER_STORE = {"DRIVER": "postgres", "DEFAULT_TENANT": "none", "DATABASE": "jobs"}
"""The job store on alias ``jobs``: an enqueue inside a transaction on ``default`` is staged."""


@pytest.fixture
def other_store() -> Iterator[None]:
    with override_settings(ULTIMAT3_JOBS=OTHER_STORE):
        yield


@pytest.fixture
def processes(transactional_db: None, tmp_path: Path) -> Iterator[Processes]:
    """Requests ``transactional_db`` so that it is torn down after this fixture: every
    subprocess is dead, and its sessions closed, before the tables are flushed."""
    yield from owned(Processes(tmp_path))
