"""What follows a failed attempt: one decision for the settler and the rescuer."""

from __future__ import annotations

import random
import uuid

import pytest

from tests.testapp import jobs
from ultimat3_jobs.model.policy import ENDINGS, after_failure, rescue_policy
from ultimat3_jobs.model.registry import Registry, registry
from ultimat3_jobs.types import ExpiredAttempt, FailureDecision


def test_attempts_left_retry_after_the_jobs_own_backoff() -> None:
    definition = jobs.exit_hard.definition
    assert after_failure(definition, attempt=1, max_attempts=3) == FailureDecision(
        action="retry", delay_seconds=definition.retry.delay_seconds(1)
    )
    assert after_failure(definition, attempt=2, max_attempts=3).delay_seconds == (
        definition.retry.delay_seconds(2)
    )


def test_the_retry_delay_is_jittered_within_the_policy() -> None:
    definition = jobs.record.definition  # the default Retry: 1 s, jitter 10 %
    delays = {
        after_failure(definition, attempt=1, max_attempts=3, rng=random.Random(seed)).delay_seconds
        for seed in range(20)
    }
    assert len(delays) > 1
    assert all(0.9 <= delay <= 1.1 for delay in delays)


@pytest.mark.parametrize(
    ("definition", "action"),
    [(jobs.flaky.definition, "fail"), (jobs.flaky_dropped.definition, "drop"), (None, "fail")],
    ids=["dead_letter", "dead_letter=False", "undeclared"],
)
def test_spent_or_terminal_attempts_fail_or_drop(definition, action) -> None:
    spent = after_failure(definition, attempt=3, max_attempts=3)
    terminal = after_failure(definition, attempt=1, max_attempts=3, terminal=True)
    assert spent == terminal == FailureDecision(action=action)
    assert ENDINGS[action] == ("dropped" if action == "drop" else "dead-lettered")


def test_an_attempt_whose_body_never_started_does_not_count() -> None:
    decision = after_failure(
        jobs.flaky_dropped.definition, attempt=3, max_attempts=3, started=False
    )
    assert decision == FailureDecision(action="retry", counts_as_attempt=False)
    assert ENDINGS["retry"] is None


def test_the_rescue_policy_reads_the_declaration_by_name() -> None:
    decide = rescue_policy(registry)

    def expired(name: str, attempt: int) -> ExpiredAttempt:
        return ExpiredAttempt(
            id=uuid.uuid4(),
            claim_token=uuid.uuid4(),
            name=name,
            attempt=attempt,
            max_attempts=3,
            started=True,
        )

    assert decide(expired("tests.flaky_dropped", 3)).action == "drop"
    assert decide(expired("tests.flaky", 3)).action == "fail"
    assert decide(expired("tests.exit_hard", 2)) == FailureDecision(
        action="retry", delay_seconds=10
    )
    undeclared = rescue_policy(Registry())(expired("tests.flaky_dropped", 3))
    assert undeclared.action == "fail"
