"""The run-code permission moves here from ``jobs``: it owns it through a
proxy of ``jobs.Job`` (no table).

Users and groups hold a permission by its row's id, so the existing row is
moved to the new content type, id and grants unchanged, rather than a new
one created. Where both rows exist already (Django created the new one in a
migrate run that came before this migration), the old one's grants are added
to the new one's before the old one is deleted. On a new database there is
nothing to move: Django creates the permission after migrating. Migrating
back moves it back the same way."""

from django.db import migrations

JOBS = ("jobs", "job")
TRAINING = ("training", "trainingjob")
NAME = "May run custom Python network code, with all the rights of the server's account"


def move(apps, schema_editor, frm=JOBS, to=TRAINING):
    db = schema_editor.connection.alias
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    permissions = Permission.objects.using(db)
    old = permissions.filter(content_type__app_label=frm[0], content_type__model=frm[1], codename="run_code").first()
    if old is None:
        return
    target, _ = ContentType.objects.using(db).get_or_create(app_label=to[0], model=to[1])
    new = permissions.filter(content_type=target, codename="run_code").first()
    if new is None:
        old.content_type = target
        old.save(using=db, update_fields=["content_type"])
        return
    new.user_set.add(*old.user_set.all())
    new.group_set.add(*old.group_set.all())
    old.delete()


def move_back(apps, schema_editor):
    move(apps, schema_editor, frm=TRAINING, to=JOBS)


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("jobs", "0008_job_without_permissions"),
    ]

    operations = [
        migrations.CreateModel(
            name="TrainingJob",
            fields=[],
            options={
                "permissions": [("run_code", NAME)],
                "proxy": True,
                "default_permissions": (),
                "indexes": [],
                "constraints": [],
            },
            bases=("jobs.job",),
        ),
        migrations.RunPython(move, move_back),
    ]
