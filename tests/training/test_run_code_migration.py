"""The run-code permission moved from ``jobs`` to ``training``
(``training/migrations/0001_initial``): the permission keeps its id, so
every user's and group's grant comes along, and back again."""

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("jobs", "0007_job_silence"), ("training", None)]


def migrate(targets=None) -> None:
    """Migrate to ``targets``, by default the latest migrations."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    ContentType.objects.clear_cache()


@pytest.fixture
def grants(transactional_db):
    """alice holds the permission herself, bob through his group, carol not at all."""
    permission = Permission.objects.get(content_type__app_label="training", codename="run_code")
    alice, bob, _ = (User.objects.create_user(name) for name in ("alice", "bob", "carol"))
    alice.user_permissions.add(permission)
    group = Group.objects.create(name="coders")
    group.permissions.add(permission)
    bob.groups.add(group)
    yield permission
    migrate()  # as every other test finds the database


def holders(permission: Permission) -> tuple[list[str], list[str]]:
    return (sorted(permission.user_set.values_list("username", flat=True)),
            sorted(permission.group_set.values_list("name", flat=True)))


def may_run_code() -> list[str]:
    return sorted(user.username for user in User.objects.all() if user.has_perm("training.run_code"))


def test_the_permission_moves_back_and_forth_with_every_grant(grants):
    migrate(BEFORE)
    [old] = Permission.objects.filter(codename="run_code")
    assert (old.pk, old.content_type.app_label, old.content_type.model) == (grants.pk, "jobs", "job")
    assert holders(old) == (["alice"], ["coders"])

    migrate()
    [new] = Permission.objects.filter(codename="run_code")
    assert (new.pk, new.content_type.app_label, new.content_type.model) == (grants.pk, "training", "trainingjob")
    assert holders(new) == (["alice"], ["coders"])
    assert may_run_code() == ["alice", "bob"]


def test_where_both_permissions_exist_the_grants_of_both_are_kept(grants):
    migrate(BEFORE)
    made_meanwhile = Permission.objects.create(
        codename="run_code", name=grants.name,
        content_type=ContentType.objects.get_or_create(app_label="training", model="trainingjob")[0])
    User.objects.get(username="carol").user_permissions.add(made_meanwhile)

    migrate()
    [kept] = Permission.objects.filter(codename="run_code")
    assert (kept.pk, kept.content_type.app_label) == (made_meanwhile.pk, "training")
    assert holders(kept) == (["alice", "carol"], ["coders"])
    assert may_run_code() == ["alice", "bob", "carol"]
