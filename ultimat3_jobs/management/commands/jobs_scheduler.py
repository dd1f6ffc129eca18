"""``manage.py jobs_scheduler``: fire cron jobs (the loop lives in
``ultimat3_jobs.runtime.scheduler``)."""

from __future__ import annotations

from ultimat3_jobs.management.commands.jobs_worker import loop_command
from ultimat3_jobs.runtime.process import run_scheduler
from ultimat3_jobs.runtime.scheduler.scheduler import SchedulerConfig

Command = loop_command(
    "scheduler",
    "Fire crons on their schedules; run several, one leads.",
    lambda scheduler_id: run_scheduler(SchedulerConfig.from_settings(scheduler_id=scheduler_id)),
)
