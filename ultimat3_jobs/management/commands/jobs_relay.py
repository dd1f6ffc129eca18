"""``manage.py jobs_relay``: publish jobs staged in the outbox (the loop lives in
``ultimat3_jobs.runtime.relay``)."""

from __future__ import annotations

from ultimat3_jobs.management.commands.jobs_worker import loop_command
from ultimat3_jobs.runtime.process import run_relay
from ultimat3_jobs.runtime.relay import RelayConfig

Command = loop_command(
    "relay",
    "Publish jobs staged in x_outbox to the job store after their transaction commits.",
    lambda relay_id: run_relay(RelayConfig.from_settings(relay_id=relay_id)),
)
