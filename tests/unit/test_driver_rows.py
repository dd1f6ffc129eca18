"""DriverRows, the admin's QuerySet stand-in over rows a driver answers: exact lookups only,
filters that narrow and never widen, slices, values, and a loud refusal of anything else."""

from __future__ import annotations

import pytest
from django.db.models import Q

from ultimat3_jobs.admin.driver_rows import ListedRows
from ultimat3_jobs.models import JobPause


def pauses() -> ListedRows:
    reads: list[int] = []

    def load() -> list[JobPause]:
        reads.append(1)
        rows = []
        for scope, target in [("job", "a"), ("queue", "a"), ("queue", "b"), ("task", "c")]:
            row = JobPause(scope=scope, target=target, paused_by="", reason="")
            row.pk = f"{scope}:{target}"
            rows.append(row)
        return rows

    rows = ListedRows(JobPause, load)
    rows.reads = reads  # type: ignore[attr-defined]
    return rows


def keys(rows: object) -> list[str]:
    return [str(row.pk) for row in rows]  # type: ignore[attr-defined]


def test_exact_and_in_lookups_narrow():
    rows = pauses()
    assert keys(rows.filter(scope="queue")) == ["queue:a", "queue:b"]
    assert keys(rows.filter(scope__exact="queue", target="b")) == ["queue:b"]
    assert keys(rows.filter(pk__in=["task:c", "job:a", "nope"])) == ["job:a", "task:c"]
    # A second __in intersects; a second different value of one field matches nothing.
    assert keys(rows.filter(target__in=["a", "b"]).filter(target__in=["b", "c"])) == ["queue:b"]
    assert keys(rows.filter(scope="queue").filter(scope="job")) == []
    assert keys(rows.none()) == []
    assert rows.reads == [1]  # type: ignore[attr-defined]  # one read, shared by every copy


def test_the_q_objects_of_django_field_filters():
    rows = pauses()
    assert keys(rows.filter(Q(("scope__exact", "task")))) == ["task:c"]
    either = Q(("scope__exact", "job")) | Q(("scope__exact", "task"))
    assert keys(rows.filter(either)) == ["job:a", "task:c"]
    with pytest.raises(TypeError, match="no OR"):
        rows.filter(Q(scope="job") | Q(target="b"))
    with pytest.raises(TypeError, match="exact lookups only"):
        rows.filter(~Q(scope="job"))


def test_other_lookups_are_refused_not_answered_wrongly():
    with pytest.raises(TypeError, match="exact lookups only"):
        pauses().filter(target__startswith="a")
    with pytest.raises(TypeError, match="exact lookups only"):
        pauses().filter(created_at__gt="2026-01-01")


def test_slices_values_and_get():
    rows = pauses()
    assert keys(rows[1:3]) == ["queue:a", "queue:b"]
    assert str(rows[0].pk) == "job:a"
    assert len(rows) == rows.count() == 4 and rows.exists()
    assert list(rows.values_list("target", flat=True)) == ["a", "a", "b", "c"]
    assert list(rows.values_list("target", flat=True).distinct()) == ["a", "b", "c"]
    assert rows.values_list("target", flat=True).distinct()[:2] == ["a", "b"]
    assert rows.values_list("scope", "target")[:1] == [("job", "a")]
    assert rows.get(pk="task:c").target == "c"
    with pytest.raises(JobPause.DoesNotExist):
        rows.get(pk="task:zz")
    with pytest.raises(JobPause.MultipleObjectsReturned):
        rows.get(target="a")
