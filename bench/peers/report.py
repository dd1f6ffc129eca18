"""The side-by-side table, its ratios, and its place on the benchmarks page (pure functions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

START = "<!-- side-by-side: written by bench/run.py --peers -->"
END = "<!-- side-by-side: end -->"
BEFORE = "## How to read it"


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    unit: str
    higher_is_better: bool


COLUMNS = (
    Column("enqueue_rate", "`enqueue_many` jobs/s", "", True),
    Column("drain_rate", "drain jobs/s (2 processes)", "", True),
    Column("wake_p50", "wake p50", " ms", False),
    Column("wake_p95", "wake p95", " ms", False),
    Column("enqueue_call_p50", "enqueue call p50", " ms", False),
    Column("idle_per_min", "idle statements/min (2 workers)", "", False),
)


def number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(ours: float | None, peer: float | None) -> str:
    """``ours / peer`` as ``1.23x``; a dash where either is missing or the peer's is 0."""
    if ours is None or peer is None or peer == 0:
        return "—"
    return f"{ours / peer:.2f}x"


def table(
    systems: Sequence[tuple[str, str]],
    results: Mapping[str, Mapping[str, float]],
    ours: str = "ours",
) -> str:
    """One row per system (``(key, label)`` pairs, ours first), then one row of ratios
    ``ours / peer`` per peer."""
    head = "| system | " + " | ".join(column.title for column in COLUMNS) + " |"
    lines = [head, "| --- |" + " ---: |" * len(COLUMNS)]
    for key, label in systems:
        cells = []
        for column in COLUMNS:
            value = results.get(key, {}).get(column.key)
            cells.append("—" if value is None else number(value) + column.unit)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    labels = dict(systems)
    for key, label in systems:
        if key == ours:
            continue
        cells = [
            ratio(results.get(ours, {}).get(column.key), results.get(key, {}).get(column.key))
            for column in COLUMNS
        ]
        lines.append(f"| {labels[ours]} / {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def keep_section(old_page: str, new_page: str, start: str = START, end: str = END) -> str:
    """``new_page`` with the section between ``start`` and ``end`` of ``old_page`` carried
    over, when it had one and ``new_page`` has none: a run of the phases keeps the last
    side-by-side figures."""
    if start in new_page or start not in old_page or end not in old_page:
        return new_page
    section = old_page[old_page.index(start) : old_page.index(end) + len(end)]
    return splice(new_page, section, start, end)


def splice(page: str, section: str, start: str = START, end: str = END) -> str:
    """``page`` with ``section`` (markers included) in place of its section between ``start``
    and ``end``, or inserted before "How to read it", or appended."""
    if start in page and end in page:
        return page[: page.index(start)] + section + page[page.index(end) + len(end) :]
    if BEFORE in page:
        at = page.index(BEFORE)
        return page[:at] + section + "\n\n" + page[at:]
    return page.rstrip("\n") + "\n\n" + section + "\n"
