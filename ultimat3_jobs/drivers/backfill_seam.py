"""The seam's backfill ledger (``x_backfills``): :class:`BackfillMethods`, which
:class:`JobDriver` inherits.

Layer L2 (the seam): imports L1 only. Every driver implements these methods and passes
``tests/drivers/test_backfill_ledger.py``. The ledger says what each backfill run SWEPT, one row
per run (keyed by its job id); the registry says what exists, and ``inspect_backfills()`` is the
diff. Only a ``completed`` run blocks a new run of the same name and scope.
"""

from __future__ import annotations

import abc
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

if TYPE_CHECKING:
    from ultimat3_jobs.drivers.steps_seam import StepMethods
    from ultimat3_jobs.types import StepKind, StepStatus

BackfillStatus = Literal["running", "completed", "failed"]
BACKFILL_LIST_MAX = 1000
"""``backfill_list`` answers at most this many runs, newest first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillRun:
    """One ledger row: a run of a backfill. ``cursor`` is the last stored position (parsed
    JSON), ``rows_done`` and ``batches_done`` what the run swept so far."""

    name: str
    scope: str
    run_id: uuid.UUID
    environment: str
    status: BackfillStatus
    cursor: Any = None
    rows_done: int = 0
    batches_done: int = 0
    error: str = ""
    started_at: datetime | None = None
    updated_at: datetime | None = None
    finished_at: datetime | None = None


class BackfillMethods(abc.ABC):
    """The ledger's writes and read; every argument keyword-only."""

    has_backfill_ledger: ClassVar[bool] = True
    """Whether the store keeps the backfill ledger (``x_backfills``). A driver without it
    answers ``False`` here and refuses each method with
    :class:`~ultimat3_jobs.errors.DriverCapabilityMissing`."""

    @abc.abstractmethod
    def backfill_start(
        self, *, name: str, scope: str, run_id: uuid.UUID, environment: str
    ) -> BackfillRun | None:
        """Record the run ``run_id`` of ``name`` over ``scope`` as ``running`` (a run already
        recorded is left as it is) and answer its row; ``None`` when another run of the same
        name and scope is ``completed`` (nothing written)."""

    @abc.abstractmethod
    def backfill_advance(
        self, *, run_id: uuid.UUID, batch: int, cursor_json: str, rows: int
    ) -> bool:
        """Record that batch number ``batch`` of a running run swept ``rows`` rows and stored
        ``cursor_json``: only when the run has recorded fewer batches, so a replayed batch
        writes nothing. Answers whether it landed."""

    def backfill_step_put(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        name: str,
        seq: int,
        kind: StepKind,
        status: StepStatus,
        output_json: str = "null",
        error_json: str | None = None,
        batch: int,
    ) -> bool:
        """``step_put`` of batch number ``batch``'s step, whose output (``{"cursor", "rows",
        "done"}``) also counts the batch in the ledger of the run ``job_id``
        (``backfill_advance``) when it swept rows. Here the count is written first, so a record
        that lands never lacks its count (a replay does not count twice); a driver whose
        ledger and steps share a transaction writes both in one statement. Answers whether the
        record landed."""
        output = json.loads(output_json)
        if output["rows"]:
            self.backfill_advance(
                run_id=job_id,
                batch=batch,
                cursor_json=json.dumps(output["cursor"]),
                rows=output["rows"],
            )
        return cast("StepMethods", self).step_put(
            job_id=job_id,
            claim_token=claim_token,
            name=name,
            seq=seq,
            kind=kind,
            status=status,
            output_json=output_json,
            error_json=error_json,
        )

    @abc.abstractmethod
    def backfill_finish(
        self, *, run_id: uuid.UUID, status: BackfillStatus, error: str = ""
    ) -> bool:
        """End a running run ``completed`` or ``failed`` (with ``error``). Answers whether it
        landed."""

    @abc.abstractmethod
    def backfill_list(self, *, limit: int = BACKFILL_LIST_MAX) -> list[BackfillRun]:
        """Recorded runs, newest start first, at most ``limit``."""
