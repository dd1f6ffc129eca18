from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ultimat3_jobs", "0004_newest_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="body_pending",
            field=models.BooleanField(db_default=False, default=False),
        ),
    ]
