"""pause_add, pause_remove, pause_list, queue_pause/queue_resume, and how the claim and
queue_demand honour them."""

from __future__ import annotations

from datetime import datetime

import pytest

from tests.drivers.support import claim_ids, claim_one, enqueue, nack, request, state_of
from ultimat3_jobs.errors import PauseInvalid
from ultimat3_jobs.types import JobState


def _listed(driver):
    return [(p.scope, p.target, p.paused_by, p.reason) for p in driver.pause_list()]


def test_pause_add_twice_answers_true_then_false(driver):
    assert driver.pause_add(scope="queue", target="mail", paused_by="ops", reason="smtp down")
    assert not driver.pause_add(scope="queue", target="mail", paused_by="bob", reason="again")
    assert _listed(driver) == [("queue", "mail", "ops", "smtp down")]


def test_pause_add_same_target_other_scope_is_separate(driver):
    assert driver.pause_add(scope="queue", target="tests.echo")
    assert driver.pause_add(scope="job", target="tests.echo")
    assert driver.pause_add(scope="task", target="tests.echo")
    assert [(scope, target) for scope, target, *_ in _listed(driver)] == [
        ("queue", "tests.echo"),
        ("job", "tests.echo"),
        ("task", "tests.echo"),
    ]


def test_pause_list_oldest_first_with_defaults(driver):
    assert driver.pause_list() == []
    for target in ("c", "a", "b"):
        assert driver.pause_add(scope="queue", target=target)
    assert _listed(driver) == [("queue", t, "", "") for t in ("c", "a", "b")]
    assert all(isinstance(p.created_at, datetime) for p in driver.pause_list())
    assert all(p.created_at.utcoffset() is not None for p in driver.pause_list())


def test_pause_remove_answers_whether_there_was_one(driver):
    assert driver.pause_remove(scope="job", target="tests.echo") is False
    assert driver.pause_add(scope="job", target="tests.echo")
    assert driver.pause_add(scope="queue", target="default")
    assert driver.pause_remove(scope="job", target="tests.echo") is True
    assert driver.pause_remove(scope="job", target="tests.echo") is False
    assert [(scope, target) for scope, target, *_ in _listed(driver)] == [("queue", "default")]


@pytest.mark.parametrize(
    ("scope", "target"),
    [("tenant", "x"), ("", "x"), ("QUEUE", "x"), ("queue", ""), ("job", None)],
    ids=["unknown-scope", "empty-scope", "wrong-case", "empty-target", "none-target"],
)
@pytest.mark.parametrize("method", ["pause_add", "pause_remove"])
def test_pause_invalid_is_refused(driver, method, scope, target):
    with pytest.raises(PauseInvalid) as caught:
        getattr(driver, method)(scope=scope, target=target)
    assert caught.value.code == "X_PAUSE_INVALID"
    assert driver.pause_list() == []


def test_queue_pause_and_resume_answer_like_pause_add_and_remove(driver):
    assert driver.queue_pause(queue="default", paused_by="ops", reason="deploy") is True
    assert driver.queue_pause(queue="default") is False
    assert _listed(driver) == [("queue", "default", "ops", "deploy")]
    assert driver.queue_resume(queue="default") is True
    assert driver.queue_resume(queue="default") is False
    assert driver.pause_list() == []


def test_queue_pause_holds_claim_until_resume(driver):
    job_id = enqueue(driver)
    driver.queue_pause(queue="default")
    assert claim_ids(driver) == []
    assert state_of(driver, job_id) == JobState.QUEUED
    driver.queue_resume(queue="default")
    assert claim_ids(driver) == [job_id]


def test_queue_pause_leaves_other_queues_claimable(driver):
    held = enqueue(driver, queue="alpha", priority=9)
    free = enqueue(driver, queue="beta")
    driver.queue_pause(queue="alpha")
    assert claim_ids(driver, ["alpha", "beta"]) == [free]
    assert state_of(driver, held) == JobState.QUEUED


def test_pause_job_name_holds_claim_of_that_name_only(driver):
    held = enqueue(driver, name="tests.echo", priority=5)
    free = enqueue(driver, name="tests.noop")
    assert driver.pause_add(scope="job", target="tests.echo")
    assert claim_ids(driver) == [free]
    assert state_of(driver, held) == JobState.QUEUED
    assert driver.pause_remove(scope="job", target="tests.echo")
    assert claim_ids(driver) == [held]


def test_pause_job_name_does_not_touch_running_attempt(driver):
    enqueue(driver)
    job = claim_one(driver)
    assert driver.pause_add(scope="job", target="tests.echo")
    assert driver.job_progress(job_id=job.id, claim_token=job.claim_token, progress_json="1")
    assert state_of(driver, job.id) == JobState.RUNNING


def test_queue_demand_counts_ready_jobs(driver):
    for _ in range(3):
        enqueue(driver)
    enqueue(driver, delay_seconds=3600)
    enqueue(driver, queue="beta")
    running = enqueue(driver, queue="gamma")
    assert claim_ids(driver, ["gamma"]) == [running]
    assert driver.queue_demand(queues=["default", "beta", "gamma", "empty"]) == {
        "default": 3,
        "beta": 1,
        "gamma": 0,
        "empty": 0,
    }


def test_queue_demand_zero_when_paused(driver):
    enqueue(driver)
    enqueue(driver, queue="beta")
    driver.queue_pause(queue="default")
    assert driver.queue_demand(queues=["default", "beta"]) == {"default": 0, "beta": 1}
    driver.queue_resume(queue="default")
    assert driver.queue_demand(queues=["default", "beta"]) == {"default": 1, "beta": 1}


def test_jobs_enqueued_while_a_name_is_paused_wait_for_its_resume(driver):
    assert driver.pause_add(scope="job", target="tests.echo")
    one = enqueue(driver, priority=3)
    many = driver.job_enqueue_many(requests=[request(priority=2), request(priority=1)])
    free = enqueue(driver, name="tests.noop", priority=-5)
    assert claim_ids(driver) == [free]
    assert driver.pause_remove(scope="job", target="tests.echo")
    assert claim_ids(driver) == [one, many[0].id, many[1].id]


def test_an_attempt_retried_while_its_name_is_paused_waits_for_the_resume(driver):
    enqueue(driver)
    job = claim_one(driver)
    assert driver.pause_add(scope="job", target="tests.echo")
    assert nack("retry")(driver, job.id, job.claim_token)
    assert claim_ids(driver) == []
    assert driver.pause_remove(scope="job", target="tests.echo")
    assert claim_ids(driver) == [job.id]


def test_a_name_paused_twice_and_resumed_once_is_claimable(driver):
    held = enqueue(driver)
    assert driver.pause_add(scope="job", target="tests.echo")
    assert not driver.pause_add(scope="job", target="tests.echo")
    assert driver.pause_remove(scope="job", target="tests.echo")
    assert not driver.pause_remove(scope="job", target="tests.echo")
    assert claim_ids(driver) == [held]


def test_pausing_a_queue_leaves_a_name_pause_in_force(driver):
    held = enqueue(driver)
    assert driver.pause_add(scope="job", target="tests.echo")
    assert driver.queue_pause(queue="default")
    assert driver.queue_resume(queue="default")
    assert claim_ids(driver) == []
    assert driver.pause_remove(scope="job", target="tests.echo")
    assert claim_ids(driver) == [held]


def test_queue_demand_leaves_out_the_rows_of_a_paused_name(driver):
    for _ in range(3):
        enqueue(driver)
    enqueue(driver, name="tests.noop")
    assert driver.pause_add(scope="job", target="tests.echo")
    assert driver.queue_demand(queues=["default"]) == {"default": 1}
    assert driver.pause_remove(scope="job", target="tests.echo")
    assert driver.queue_demand(queues=["default"]) == {"default": 4}
