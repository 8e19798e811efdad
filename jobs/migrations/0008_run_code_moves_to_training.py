"""The run-code permission is the training app's now (its
``0001_initial`` moves the permission, grants and all)."""

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
