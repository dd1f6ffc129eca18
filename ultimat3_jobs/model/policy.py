"""What follows a failed attempt: the one decision the settler and the rescuer both take.

A body that raised (the settler) and an attempt whose lease expired because its worker was lost
(the rescuer) end the same way: retried after the job's backoff, failed for good and kept as a
dead letter, or dropped when the job was declared with ``dead_letter=False``. The driver's
statements receive the decision; they never re-derive it from the row.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Literal

from ultimat3_jobs.model.definitions import JobDefinition, Retry
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.types import ExpiredAttempt, FailureDecision, NackAction

Ending = Literal["completed", "dead-lettered", "dropped", "refused"]

ENDINGS: dict[NackAction, Ending | None] = {
    "retry": None,
    "fail": "dead-lettered",
    "drop": "dropped",
}
"""The ``on_settled`` ending a failure action reports; a retry reports none."""

DEFAULT_RETRY = Retry()


def after_failure(
    definition: JobDefinition | None,
    *,
    attempt: int,
    max_attempts: int,
    terminal: bool = False,
    started: bool = True,
    rng: random.Random | None = None,
) -> FailureDecision:
    """Decide what follows failed attempt number ``attempt`` of ``max_attempts``.

    - An attempt whose body never started does not count: it goes back to the queue, due now,
      with its attempt number given back (it cannot have been the cause of its worker's loss).
    - Attempts left and not ``terminal``: retry after the job's backoff for this attempt,
      jittered (the settings' defaults for a job this process does not declare).
    - Spent (or terminal): ``drop`` for a job declared ``dead_letter=False``, else ``fail``.
    """
    if not started:
        return FailureDecision(action="retry", delay_seconds=0.0, counts_as_attempt=False)
    if not terminal and attempt < max_attempts:
        retry = definition.retry if definition is not None else DEFAULT_RETRY
        return FailureDecision(action="retry", delay_seconds=retry.delay_seconds(attempt, rng=rng))
    if definition is not None and not definition.dead_letter:
        return FailureDecision(action="drop")
    return FailureDecision(action="fail")


def rescue_policy(registry: Registry) -> Callable[[ExpiredAttempt], FailureDecision]:
    """The rescuer's decision for one expired attempt, by the job's declaration in
    ``registry`` (a lost worker is a failed attempt like any other)."""

    def decide(expired: ExpiredAttempt) -> FailureDecision:
        handle = registry.find(expired.name)
        return after_failure(
            handle.definition if handle is not None else None,
            attempt=expired.attempt,
            max_attempts=expired.max_attempts,
            started=expired.started,
        )

    return decide
