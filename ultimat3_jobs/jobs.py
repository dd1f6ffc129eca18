"""The jobs ultimat3-jobs declares for itself, found by the autodiscovery of each installed
app's ``jobs`` module: the default purge (``ultimat3_jobs.purge``), a cron job on
``PURGE_CRON`` (every 15 minutes unless set; ``None`` declares none) over every built-in
target (the job store's, then the webhook ledger's), each kept for its own setting. See the
Factories guide."""

from __future__ import annotations

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import JobsConfigurationError
from ultimat3_jobs.factories.purge import purge
from ultimat3_jobs.factories.retention import DEFAULT_PURGE_NAME, default_targets
from ultimat3_jobs.webhooks.retention import webhook_deliveries

try:
    PURGE_CRON = get_settings().purge_cron
except JobsConfigurationError:
    # The system checks report a bad ULTIMAT3_JOBS (every problem at once), and its first use
    # raises; declaring nothing here keeps that report whole.
    PURGE_CRON = None

if PURGE_CRON is not None:
    purge(DEFAULT_PURGE_NAME, [*default_targets(), webhook_deliveries()], cron=PURGE_CRON)
