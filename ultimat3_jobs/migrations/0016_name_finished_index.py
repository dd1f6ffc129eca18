from django.db import migrations, models


class Migration(migrations.Migration):
    """x_jobs_name_state (name, state) held every row, so every enqueue and every claim wrote an
    entry to it (no update of x_jobs is HOT: state is in the partial indexes' predicates). Its
    readers (queue_stats, job_requeue_failed) read finished rows only: x_jobs_name_finished
    holds those. Building it on a large table holds back writes to x_jobs while it runs: apply
    it at a quiet time, or build the index by hand first with ``create index concurrently``
    (the SQL of ``manage.py sqlmigrate ultimat3_jobs 0016`` with that word added) and then
    ``migrate --fake`` this one."""

    dependencies = [
        ("ultimat3_jobs", "0015_lease_operator"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="job", name="x_jobs_name_state"),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("state__in", ["cancelled", "completed", "failed"])),
                fields=["name", "state"],
                name="x_jobs_name_finished",
            ),
        ),
    ]
