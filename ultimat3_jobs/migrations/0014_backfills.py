import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):
    """The factories' tables: ``x_backfills`` (the ledger of backfill runs) and
    ``x_jobs_finished``, the partial index the purge deletes finished jobs through, one state
    and oldest finish first. Building the index holds back writes to x_jobs while it runs on a
    large table: apply it at a quiet time, or build it by hand first with ``create index
    concurrently`` (the SQL of ``manage.py sqlmigrate ultimat3_jobs 0012`` with that word added)
    and then ``migrate --fake`` this one."""

    dependencies = [
        ("ultimat3_jobs", "0013_leases"),
    ]

    operations = [
        migrations.CreateModel(
            name="Backfill",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200)),
                ("scope", models.CharField(max_length=200)),
                ("run_id", models.UUIDField(unique=True)),
                (
                    "environment",
                    models.CharField(blank=True, db_default="", default="", max_length=100),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("running", "running"),
                            ("completed", "completed"),
                            ("failed", "failed"),
                        ],
                        max_length=12,
                    ),
                ),
                ("cursor", models.JSONField(blank=True, null=True)),
                ("rows_done", models.BigIntegerField(db_default=0, default=0)),
                ("batches_done", models.IntegerField(db_default=0, default=0)),
                ("error", models.TextField(blank=True, db_default="", default="")),
                (
                    "started_at",
                    models.DateTimeField(db_default=django.db.models.functions.datetime.Now()),
                ),
                (
                    "updated_at",
                    models.DateTimeField(db_default=django.db.models.functions.datetime.Now()),
                ),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "db_table": "x_backfills",
            },
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("state__in", ["cancelled", "completed", "failed"])),
                fields=["state", "finished_at"],
                name="x_jobs_finished",
            ),
        ),
        migrations.AddIndex(
            model_name="backfill",
            index=models.Index(fields=["name", "scope"], name="x_backfills_key"),
        ),
        migrations.AddConstraint(
            model_name="backfill",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status", "completed")),
                fields=("name", "scope"),
                name="x_backfills_completed",
            ),
        ),
        migrations.AddConstraint(
            model_name="backfill",
            constraint=models.CheckConstraint(
                condition=models.Q(("status__in", ["running", "completed", "failed"])),
                name="x_backfills_status_valid",
            ),
        ),
    ]
