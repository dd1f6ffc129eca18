"""The operator surface's logic: what ``manage.py jobs`` and the admin do to jobs and queues.

Layer L4 (processes): imports L1-L3 only and speaks to the store only through the
:class:`~ultimat3_jobs.drivers.base.JobDriver` it is handed, so every surface (the CLI, the admin,
the metrics view) acts through the same verbs and reads through the same functions.

* :mod:`~ultimat3_jobs.operator.verbs`: cancel, requeue, promote, remove, pause, resume, retry.
* :mod:`~ultimat3_jobs.operator.introspection`: list, show (with redaction), stats.
* :mod:`~ultimat3_jobs.operator.metrics`: the Prometheus text exposition.
"""

from __future__ import annotations
