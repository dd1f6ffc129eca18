"""``on_settled`` runs in the job's tenant scope and is tried ``ON_SETTLED_ATTEMPTS`` times until
it returns, its errors logged, never raised."""

from __future__ import annotations

import logging

import pytest
from django.test import override_settings

from tests.limits import jobs
from tests.limits.support import finished
from tests.worker.conftest import wait_for
from ultimat3_jobs.model.context import JobContext, current_tenant
from ultimat3_jobs.runtime.worker.settle import run_settled_hook


def test_the_hook_is_tried_again_in_the_jobs_tenant_scope(make_worker) -> None:
    result = jobs.hooked.enqueue(org="acme")
    make_worker(queues=("default",))
    wait_for(lambda: finished([result.id]), what="the job")
    wait_for(lambda: len(jobs.HOOK_CALLS) == 3, what="three tries of the hook")
    assert [(str(result.id), "completed", "acme")] * 3 == jobs.HOOK_CALLS


def test_the_tries_stop_at_the_setting_and_nothing_is_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str | None] = []

    def always_fails(ctx: JobContext, ending: str) -> None:
        calls.append(current_tenant())
        raise ValueError("no")

    ctx = JobContext(job_id=None, name="tests.hook", tenant_id="t-1")  # type: ignore[arg-type]
    two_tries = {"DEFAULT_TENANT": "none", "ON_SETTLED_ATTEMPTS": 2}
    with (
        override_settings(ULTIMAT3_JOBS=two_tries),
        caplog.at_level(logging.ERROR, logger="ultimat3_jobs.worker"),
    ):
        run_settled_hook(always_fails, ctx, "completed")
    assert calls == ["t-1", "t-1"]
    assert current_tenant() is None  # the scope does not leak
    tries = [r.getMessage() for r in caplog.records if "hook_failed" in r.getMessage()]
    assert [t.endswith(f"(try {n} of 2)") for n, t in enumerate(tries, 1)] == [True, True]
