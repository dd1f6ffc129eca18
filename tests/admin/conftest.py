"""Fixtures of the admin tests: users in roles, the configured driver, jobs in a given state."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from tests.drivers.support import attempt_error, claim_one, enqueue, put_in_state
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.types import PRIORITY_MAX

ROLES: dict[str, dict[str, Any]] = {
    "superuser": {"staff": True, "superuser": True, "perms": []},
    "viewer": {"staff": True, "perms": ["view_job"]},
    "input_viewer": {"staff": True, "perms": ["view_job", "view_job_input"]},
    "operator": {"staff": True, "perms": ["view_job", "cancel_job", "requeue_job"]},
    "runner": {"staff": True, "perms": ["view_job", "promote_job", "remove_job"]},
    "pauser": {"staff": True, "perms": ["pause_queue"]},
    "pauser_viewer": {"staff": True, "perms": ["view_job", "pause_queue"]},
    # Every permission, but not staff: the admin lets them nowhere.
    "nonstaff": {
        "staff": False,
        "perms": [
            "view_job",
            "view_job_input",
            "cancel_job",
            "requeue_job",
            "promote_job",
            "remove_job",
            "pause_queue",
        ],
    },
}
"""Who is who in the permission matrix. ``pauser`` may pause queues but not see jobs, so it has
no changelist; ``pauser_viewer`` sees jobs and may pause their names."""


def make_user(name: str, *, staff: bool, superuser: bool = False, perms: list[str]) -> User:
    if superuser:
        user = User.objects.create_superuser(name, f"{name}@example.com", "pw")
    else:
        user = User.objects.create_user(name, f"{name}@example.com", "pw", is_staff=staff)
    if perms:
        user.user_permissions.add(
            *Permission.objects.filter(content_type__app_label="ultimat3_jobs", codename__in=perms)
        )
        assert user.user_permissions.count() == len(perms)
    return user


@pytest.fixture
def jobs_driver(db: None) -> JobDriver:
    """The driver the admin acts through (PostgreSQL, on the test's own connection)."""
    return get_driver()


@pytest.fixture
def role_client(db: None) -> Callable[[str], Client]:
    """A logged-in client for a role of :data:`ROLES` (``Client()`` for ``anonymous``)."""

    users: dict[str, User] = {}

    def login(role: str, **client_options: Any) -> Client:
        client = Client(**client_options)
        if role != "anonymous":
            if role not in users:
                users[role] = make_user(role, **ROLES[role])
            client.force_login(users[role])
        return client

    return login


FIRST_IN_LINE = {"priority": PRIORITY_MAX, "run_at": datetime(2000, 1, 1, tzinfo=UTC)}
"""Enqueue options that put a job before any other in its queue, so the next claim takes it."""


def job_in_state(driver: JobDriver, state: str, **overrides: Any) -> uuid.UUID:
    """A job moved to ``state`` (through a claim for running, completed and failed)."""
    if state in ("running", "completed", "failed"):
        overrides = {**FIRST_IN_LINE, **overrides}
    job_id = enqueue(driver, **overrides)
    put_in_state(driver, job_id, state)
    return job_id


def job_failed_twice(driver: JobDriver, **overrides: Any) -> uuid.UUID:
    """A failed job with two failed attempts, each with its traceback."""
    overrides = {**FIRST_IN_LINE, **overrides}
    job_id = enqueue(driver, **overrides)
    queue = overrides.get("queue", "default")
    first = claim_one(driver, (queue,))
    assert driver.job_nack(
        job_id=job_id,
        claim_token=first.claim_token,
        action="retry",
        error=attempt_error(1, traceback="Traceback (most recent call last):\n  FIRST-TB\n"),
    )
    second = claim_one(driver, (queue,))
    assert driver.job_nack(
        job_id=job_id,
        claim_token=second.claim_token,
        action="fail",
        error=attempt_error(2, traceback="Traceback (most recent call last):\n  SECOND-TB\n"),
    )
    return job_id
