"""The demo's jobs, declared with ``@job``, and one cron job, declared with ``@cron``.

A body takes the job's context first (``ctx.job_id``, ``ctx.attempt``, ``ctx.logger``,
``ctx.progress(current, total)``), then its input as keyword arguments.
"""

from __future__ import annotations

import time

from django.core.mail import send_mail
from django.db.models import Count

from ultimat3_jobs import JobContext, Retry, cron, job
from ultimat3_jobs.models import Job


@job(
    queue="emails",
    tenant="none",
    retry=Retry(attempts=5, backoff_base_seconds=2, backoff_cap_seconds=300),
)
def send_welcome(ctx: JobContext, *, user_id: int, email: str) -> None:
    """Send the welcome email of a new user (the demo's mail backend writes it to a file)."""
    ctx.logger.info("welcome email for user %s to %s (attempt %s)", user_id, email, ctx.attempt)
    send_mail(
        subject="Welcome!",
        message=f"Hello user {user_id}, welcome aboard.",
        from_email=None,
        recipient_list=[email],
    )


@job(queue="default", tenant="none", sensitive=["api_token"])
def sync_account(ctx: JobContext, *, account_id: int, api_token: str) -> dict[str, int]:
    """Pretend to sync an account from a remote API in a few steps.

    ``api_token`` is listed in ``sensitive``, so the package's operator views redact it; the job
    never logs it either.
    """
    steps = 3
    for step in range(1, steps + 1):
        time.sleep(0.01)  # stands in for one page of remote API calls
        ctx.progress(step, steps)
    ctx.logger.info("synced account %s in %s steps", account_id, steps)
    return {"account_id": account_id, "pages": steps}


@cron(cron="* * * * *", tz="UTC", tenant="none")
def queue_report(ctx: JobContext) -> dict[str, int]:
    """Every minute, count the jobs waiting in each queue and log the counts.

    The scheduler that runs inside the demo's worker (``--with-scheduler``) fires it on the
    minute; ``python manage.py jobs cron`` lists it, with its next and last fire.
    """
    rows = Job.objects.filter(state="queued").values("queue").annotate(jobs=Count("id"))
    waiting = {row["queue"]: row["jobs"] for row in rows.order_by("queue")}
    ctx.logger.info("jobs waiting per queue: %s", waiting or "none")
    return waiting
