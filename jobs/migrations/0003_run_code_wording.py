"""The run-code permission's name says what it grants: code run with the
server account's rights. Django creates missing permissions after migrating
but never renames one, so the existing row is renamed here."""

from django.db import migrations

NAME = "May run custom Python network code, with all the rights of the server's account"
OLD_NAME = "May run custom Python network code"


def rename(apps, schema_editor, name=NAME):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(content_type__app_label="jobs", codename="run_code").update(name=name)


def rename_back(apps, schema_editor):
    rename(apps, schema_editor, OLD_NAME)


class Migration(migrations.Migration):

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("jobs", "0002_alter_job_options"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="job",
            options={"ordering": ["-created_at", "-id"], "permissions": [("run_code", NAME)]},
        ),
        migrations.RunPython(rename, rename_back),
    ]
