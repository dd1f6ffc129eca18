"""Fixtures shared by the whole suite."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import DatabaseError, connections

from ultimat3_jobs.conf import reset_settings
from ultimat3_jobs.drivers import reset_drivers


@pytest.fixture(autouse=True)
def _fresh_driver_cache() -> Iterator[None]:
    """Each test builds its driver from the settings it runs under."""
    reset_settings()
    reset_drivers()
    yield
    reset_settings()
    reset_drivers()


@pytest.fixture(scope="session", autouse=True)
def _no_session_outlives_the_suite(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Before the test databases are dropped, end every other session still connected to them
    (a subprocess or thread that outlived its test), and say which: a DROP DATABASE refused for
    "being accessed by other users" would otherwise fail the last test of the run."""
    yield
    with django_db_blocker.unblock():
        for alias in connections:
            connection = connections[alias]
            # Only a test database this run made (Django names it test_<name>): a run whose
            # tests never touched the database still points at the real one.
            if connection.vendor != "postgresql" or not str(
                connection.settings_dict.get("NAME") or ""
            ).startswith("test_"):
                continue
            try:
                with connection.cursor() as cursor:
                    cursor.execute(
                        "select pg_terminate_backend(pid), application_name, state,"
                        " left(query, 120) from pg_stat_activity"
                        " where datname = current_database() and pid <> pg_backend_pid()"
                    )
                    ended = cursor.fetchall()
            except DatabaseError:  # an alias whose test database this run never made
                continue
            finally:
                connection.close()
            for _, application, state, query in ended:
                # Past pytest's capture (and its warnings-as-errors), so that it is seen.
                sys.__stderr__.write(
                    f"\nconftest: a session outlived the suite on {alias!r} and was ended: "
                    f"{application or '-'} ({state}): {query}\n"
                )
