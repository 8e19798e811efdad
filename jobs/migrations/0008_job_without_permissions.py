"""The job model has no permission of its own any more: run-code belongs to
the app whose networks need it, whose migration moves it, grants and all."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0007_job_silence"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={"ordering": ["-created_at", "-id"]},
        ),
    ]
