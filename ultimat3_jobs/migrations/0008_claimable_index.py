from django.db import migrations, models


class Migration(migrations.Migration):
    """A paused job name's rows leave the claim index: ``paused`` is set by the pause and by an
    enqueue that sees it, cleared by the resume. Adding the column is instant; rebuilding
    x_jobs_claim on a large table holds back inserts into x_jobs while it runs: apply it at a
    quiet time, or build the indexes by hand first with ``create index concurrently`` (the SQL of
    ``manage.py sqlmigrate ultimat3_jobs 0008`` with that word added, under a temporary name
    swapped in afterwards) and then ``migrate --fake`` this one."""

    dependencies = [
        ("ultimat3_jobs", "0007_search_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="paused",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RemoveIndex(
            model_name="job",
            name="x_jobs_claim",
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("paused", False), ("state", "queued")),
                fields=["queue", "-priority", "run_at"],
                name="x_jobs_claim",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("paused", True)),
                fields=["name"],
                name="x_jobs_paused",
            ),
        ),
    ]
