# x_jobs_name_state (name, state) held every row, so every claim and every enqueue wrote an entry
# to it (no update of x_jobs is HOT: state is in the partial indexes' predicates). Its readers
# (queue_stats, job_requeue_failed) read finished rows only: x_jobs_name_finished holds those.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ultimat3_jobs", "0015_lease_operator"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="job",
            name="x_jobs_name_state",
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("state__in", ["cancelled", "completed", "failed"])),
                fields=["name", "state"],
                name="x_jobs_name_finished",
            ),
        ),
    ]
