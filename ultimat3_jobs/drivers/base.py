"""The seam's public names, where drivers and callers import them from: :class:`JobDriver`, the
one interface the runtime speaks to a job store (``job_driver.py``, with its operator part in
``operating.py``); :class:`OutboxStore`, the outbox seam (``outbox_store.py``); and what every
driver shares, the seam's bounds, argument checks and settle log (``common.py``).

Layer L2: imports L1 only. A runtime module is handed a driver (see :func:`get_driver`); it never
imports a concrete one. Every driver passes the one parity suite (``tests/drivers/``), which checks
the semantics written in the docstrings of those modules.
"""

from __future__ import annotations

from ultimat3_jobs.drivers.common import (
    ENQUEUE_CHUNK,
    JOB_PAGE_MAX,
    OUTBOX_ERROR_CHARS,
    PAUSE_TARGET_MAX_LENGTH,
    QUEUE_DEMAND_ROWS,
    QUEUE_STATS_ROWS,
    RESCUE_BATCH_DEFAULT,
    JobListQuery,
    WakeSubscription,
    call_on_wake,
    check_claim_queues,
    check_counter_period,
    check_heartbeat_queues,
    check_job_list,
    check_nack_action,
    check_pause,
    check_queue_stats_limit,
    check_settle_action,
    cursor_gone,
    log_lost_beats,
    log_unowned,
    log_unsettled,
    outbox_error_text,
    owned,
    settle_logger,
    write_now,
    writes_now,
)
from ultimat3_jobs.drivers.job_driver import JobDriver, describe
from ultimat3_jobs.drivers.leases_seam import (
    LEASE_LIST_MAX,
    HandOff,
    LeaseGrant,
    LeaseHolder,
    LeaseMethods,
    LeaseRequest,
    LeaseRun,
)
from ultimat3_jobs.drivers.operating import OperatorSeam
from ultimat3_jobs.drivers.outbox_store import OutboxStore

__all__ = [
    "ENQUEUE_CHUNK",
    "JOB_PAGE_MAX",
    "LEASE_LIST_MAX",
    "OUTBOX_ERROR_CHARS",
    "PAUSE_TARGET_MAX_LENGTH",
    "QUEUE_DEMAND_ROWS",
    "QUEUE_STATS_ROWS",
    "RESCUE_BATCH_DEFAULT",
    "HandOff",
    "JobDriver",
    "JobListQuery",
    "LeaseGrant",
    "LeaseHolder",
    "LeaseMethods",
    "LeaseRequest",
    "LeaseRun",
    "OperatorSeam",
    "OutboxStore",
    "WakeSubscription",
    "call_on_wake",
    "check_claim_queues",
    "check_counter_period",
    "check_heartbeat_queues",
    "check_job_list",
    "check_nack_action",
    "check_pause",
    "check_queue_stats_limit",
    "check_settle_action",
    "cursor_gone",
    "describe",
    "log_lost_beats",
    "log_unowned",
    "log_unsettled",
    "outbox_error_text",
    "owned",
    "settle_logger",
    "write_now",
    "writes_now",
]
