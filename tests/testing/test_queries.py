"""enqueued_jobs, assert_enqueued, assert_not_enqueued, on every driver."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.testing.jobs import greet, other
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.testing import (
    EnqueuedJob,
    assert_enqueued,
    assert_not_enqueued,
    enqueued_jobs,
    run_enqueued,
)


def test_enqueued_jobs_answers_the_queued_rows_oldest_first(driver: JobDriver) -> None:
    first = greet.enqueue(who="ada", org="acme")
    second = greet.using(priority=5, delay=60).enqueue(who="bob")
    other.enqueue(n=1)

    jobs = enqueued_jobs(greet)

    assert [job.id for job in jobs] == [first.id, second.id]
    assert isinstance(jobs[0], EnqueuedJob)
    assert jobs[0].input == {"who": "ada", "org": "acme"}
    assert (jobs[0].queue, jobs[0].priority, jobs[0].tenant) == ("greetings", 0, "acme")
    assert jobs[1].priority == 5
    assert jobs[1].run_at - jobs[0].run_at > timedelta(seconds=50)
    assert enqueued_jobs("testing.greet") == jobs
    assert {job.name for job in enqueued_jobs()} == {"testing.greet", "testing.other"}


def test_enqueued_jobs_leaves_out_jobs_that_ran(driver: JobDriver) -> None:
    greet.enqueue(who="ada")
    run_enqueued()
    assert enqueued_jobs(greet) == []


def test_assert_enqueued_matches_a_subset_of_the_input(driver: JobDriver) -> None:
    result = greet.enqueue(who="ada", org="acme", tags=["a", "b"])

    found = assert_enqueued(greet, who="ada")

    assert found.id == result.id
    # Expected values compare in their JSON form: a tuple matches the stored list.
    assert_enqueued(greet, tags=("a", "b"))
    assert_enqueued("testing.greet", tags=["a", "b"], org="acme")
    assert_enqueued(greet)


def test_assert_enqueued_checks_the_options(driver: JobDriver) -> None:
    greet.using(priority=7, queue="vip").enqueue(who="ada", org="acme")

    assert_enqueued(greet, options={"queue": "vip", "priority": 7, "tenant": "acme"}, who="ada")
    with pytest.raises(AssertionError, match=r"queue='greetings'"):
        assert_enqueued(greet, options={"queue": "greetings"}, who="ada")


def test_assert_enqueued_refuses_an_unknown_option(driver: JobDriver) -> None:
    with pytest.raises(TypeError, match=r"unknown option\(s\) colour; options= takes queue"):
        assert_enqueued(greet, options={"colour": "red"})
    with pytest.raises(TypeError, match="a job is a @job handle or a job name"):
        assert_enqueued(42)  # type: ignore[arg-type]


def test_the_failure_message_lists_what_is_enqueued_with_secrets_redacted(
    driver: JobDriver,
) -> None:
    queued = greet.enqueue(who="bob", card="4111-1111", org="acme")

    with pytest.raises(AssertionError) as failure:
        assert_enqueued(greet, who="ada", card="5500-0000")

    message = str(failure.value)
    assert message.startswith(
        "expected a queued job testing.greet with input containing "
        "{'who': 'ada', 'card': '[redacted]'}; 1 job(s) of that name are enqueued:"
    )
    assert str(queued.id) in message
    assert "'who': 'bob'" in message and "queue='greetings'" in message
    assert "'card': '[redacted]'" in message
    assert "4111" not in message and "5500" not in message


def test_the_failure_message_says_when_nothing_is_enqueued(driver: JobDriver) -> None:
    with pytest.raises(AssertionError, match=r"no job of that name is enqueued\.$"):
        assert_enqueued(greet, who="ada")
    with pytest.raises(AssertionError, match=r"no job is declared under the name 'testing\.nope'"):
        assert_enqueued("testing.nope")


def test_assert_not_enqueued(driver: JobDriver) -> None:
    assert_not_enqueued(greet)
    greet.enqueue(who="ada", card="4111")

    assert_not_enqueued(greet, who="bob")
    assert_not_enqueued(other)
    with pytest.raises(AssertionError) as failure:
        assert_not_enqueued(greet, who="ada")
    message = str(failure.value)
    assert message.startswith(
        "expected no queued job testing.greet with input containing {'who': 'ada'}; 1 matched:"
    )
    assert "4111" not in message and "[redacted]" in message
    with pytest.raises(AssertionError, match=r"testing.greet \(any input\); 1 matched"):
        assert_not_enqueued(greet)
