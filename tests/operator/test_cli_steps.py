"""``manage.py jobs`` and durable jobs: ``show`` lists a job's stored steps (redacted like its
input), and ``send-event`` ends the waits on an event, with its refusals."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from tests.drivers.steps_support import done, running, wait
from tests.operator.test_cli import SECRET, refused, run, run_json
from ultimat3_jobs.drivers import get_driver

pytestmark = pytest.mark.django_db


def test_show_lists_the_steps_and_send_event_ends_the_wait() -> None:
    driver = get_driver()
    job = running(driver)
    assert done(driver, job, "charge", 0, json.dumps({"charged": 12}))
    assert wait(driver, job, "paid", event="order.paid", key="o-1") is not None

    detail = run_json("show", str(job.id), "--json")
    steps = {step["name"]: step for step in detail["steps"]}
    assert [step["name"] for step in detail["steps"]] == ["charge", "paid"]
    assert (steps["charge"]["status"], steps["charge"]["output"]) == ("done", {"charged": 12})
    paid = steps["paid"]
    assert (paid["status"], paid["event"], paid["key"]) == ("waiting", "order.paid", "o-1")
    assert paid["wait_until"] is not None and paid["wait_since"] is not None
    text = run("show", str(job.id))
    assert "steps: 2" in text
    assert "paid (event) waiting: event order.paid key o-1 until" in text

    # Another key's event ends nothing; the right one ends the wait with its payload.
    assert "ended 0 wait(s)" in run("send-event", "order.paid", "--key", "o-2")
    out = run("send-event", "order.paid", "--key", "o-1", "--payload", '{"amount": 12}')
    assert "event order.paid sent; it ended 1 wait(s)" in out
    resolved = driver.step_wait_resolve(job_id=job.id, claim_token=job.claim_token, name="paid")
    assert resolved is not None
    assert (resolved.status, resolved.output) == ("done", {"amount": 12})


def test_show_redacts_step_outputs_like_the_input() -> None:
    driver = get_driver()
    job = running(driver)
    assert done(driver, job, "login", 0, json.dumps({"api_key": SECRET, "user": "ada"}))
    shown = run_json("show", str(job.id), "--json")
    assert SECRET not in json.dumps(shown)
    assert shown["steps"][0]["output"]["user"] == "ada"
    revealed = run_json("show", str(job.id), "--json", "--reveal")
    assert revealed["steps"][0]["output"]["api_key"] == SECRET


def test_send_event_refusals_name_the_rule() -> None:
    with pytest.raises(CommandError, match="--payload must be JSON"):
        run("send-event", "order.paid", "--payload", "{not json")
    refused("X_EVENT_INVALID", "send-event", "")
    refused("X_EVENT_INVALID", "send-event", "order.paid", "--ttl", "-1")
