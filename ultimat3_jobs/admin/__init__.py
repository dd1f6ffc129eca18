"""The Django admin of ultimat3-jobs: jobs (with an action per operator verb), pauses, workers,
cron jobs, webhook endpoints and their ledger, consumers, subject requests, the queues page and
the dashboard. Django's admin autodiscovery imports this package; importing its modules
registers them on ``django.contrib.admin.site``, and no more: the pages' views and the verbs they
act through load at their first use (``deferred.py``), since every process with the admin
installed, a worker's too, runs the autodiscovery.

Layer: surface. The admin holds no logic of its own: it reads through the ORM (or, where the
driver's ``store_in_orm`` is False, through the driver: ``driver_rows.py``, ``driver_jobs.py``)
and :mod:`ultimat3_jobs.operator.introspection`, and acts through
:mod:`ultimat3_jobs.operator.verbs` on the driver :func:`~ultimat3_jobs.drivers.get_driver`
answers.
"""

from __future__ import annotations

from ultimat3_jobs.admin.consumers import ConsumerAdmin
from ultimat3_jobs.admin.cron import CronAdmin
from ultimat3_jobs.admin.jobs import JobAdmin
from ultimat3_jobs.admin.pauses import JobPauseAdmin
from ultimat3_jobs.admin.subjects import SubjectRequestAdmin
from ultimat3_jobs.admin.webhooks import WebhookDeliveryAdmin, WebhookEndpointAdmin
from ultimat3_jobs.admin.workers import JobWorkerAdmin

__all__ = [
    "ConsumerAdmin",
    "CronAdmin",
    "JobAdmin",
    "JobPauseAdmin",
    "JobWorkerAdmin",
    "SubjectRequestAdmin",
    "WebhookDeliveryAdmin",
    "WebhookEndpointAdmin",
]
