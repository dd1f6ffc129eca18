"""Jobs the test suite enqueues; autodiscovered like any app's jobs.py."""

from __future__ import annotations

from typing import Any

from ultimat3_jobs import Retry, job


@job(name="tests.noop", tenant="none")
def noop(ctx: Any) -> None:
    """Does nothing: the cheapest job there is."""


@job(name="tests.echo", queue="default", tenant="none", retry=Retry(attempts=4))
def echo(ctx: Any, **input: Any) -> dict[str, Any]:
    """Answers its input; takes any keyword."""
    return dict(input)


@job(name="tests.add", queue="math", tenant=lambda input: input.get("org"))
def add(ctx: Any, *, a: int, b: int, org: str | None = None) -> int:
    return a + b


@job(
    name="tests.secret",
    tenant="none",
    dead_letter=False,
    sensitive=["api_token"],
    retry=Retry(attempts=2, backoff_base_seconds=0.5, backoff_cap_seconds=1, jitter=0),
)
def secret(ctx: Any, *, account: int, api_token: str) -> None:
    """Holds a sensitive field."""
