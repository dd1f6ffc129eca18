"""The cost of a durable step: a drain of jobs of five no-op steps beside the same drain of
jobs of one step, so the difference is four executed steps per job, in the database's
transactions and in the worker's CPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.run import Bench, Drained

SLOTS = 32
MANY = 5


@dataclass(frozen=True)
class StepCost:
    steps_per_second: float
    statements_per_step: float
    cpu_us_per_step: float


def step_cost(one: Drained, many: Drained, extra_steps: int) -> StepCost:
    """Per executed step: what the drain of ``many``-step jobs cost beyond the one-step drain,
    divided by the extra steps it ran (``extra_steps`` per job)."""
    steps = one.jobs * extra_steps
    return StepCost(
        steps_per_second=many.jobs * (extra_steps + 1) / many.span,
        statements_per_step=(many.xacts - one.xacts) / steps,
        cpu_us_per_step=(many.cpu - one.cpu) / steps * 1e6,
    )


def phase_steps(bench: Bench) -> None:
    from bench.jobs import steps as steps_job
    from bench.run import Figure

    n = bench.scale.steps_jobs
    one, many = (
        bench.drain_once(
            n,
            1,
            SLOTS,
            key=f"steps_{count}",
            handle=steps_job,
            payload={"steps": count},
            jobs=f"jobs of {count} no-op step{'s' if count > 1 else ''}",
        )
        for count in (1, MANY)
    )
    cost = step_cost(one, many, MANY - 1)
    bench.add(
        Figure(
            "steps_rate",
            f"steps stored while draining {n:,} jobs of {MANY} no-op steps, 1 process",
            cost.steps_per_second,
            "steps/s",
            detail=(
                f"per executed step, beyond a 1-step job: {cost.statements_per_step:.2f} "
                f"transactions, worker CPU {cost.cpu_us_per_step:,.0f} µs"
            ),
        )
    )
