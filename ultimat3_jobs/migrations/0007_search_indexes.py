from django.db import migrations, models


class Migration(migrations.Migration):
    """The admin's search by idempotency key and its tenant filter read these indexes instead
    of the whole table. On a large table, building them holds back inserts into x_jobs while
    it runs: apply it at a quiet time, or build the two indexes by hand first with
    ``create index concurrently`` (the SQL of ``manage.py sqlmigrate ultimat3_jobs 0007`` with
    that word added) and then ``migrate --fake`` this one."""

    dependencies = [
        ("ultimat3_jobs", "0006_rescue_policy"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=["idempotency_key", "-created_at", "-id"],
                name="x_jobs_key_search",
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("tenant_id__isnull", False)),
                fields=["tenant_id", "-created_at", "-id"],
                name="x_jobs_tenant",
            ),
        ),
    ]
