"""Declares a name tests.testapp already took: start-up must refuse it."""

from __future__ import annotations

from typing import Any

from ultimat3_jobs import job


@job(name="tests.echo", tenant="none")
def echo_again(ctx: Any) -> None:
    """Clashes with tests.testapp.jobs.echo."""
