"""The run-code permission: code a job runs has the server account's rights,
so the permission says so where it is granted, is checked again on clone,
resume and when a worker starts the job, and job processes get no secrets
in their environment."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from jobs import services
from jobs.models import Job, Status
from jobs.permissions import VOUCHED_BY
from tests.jobtools import events_of, submit_sleep, wait_status

CODE = {"steps": 1, "step_seconds": 0.01, "code": True}


def run_code_permission() -> Permission:
    return Permission.objects.get(content_type__app_label="training", codename="run_code")


def grant(user) -> None:
    user.user_permissions.add(run_code_permission())


def revoke(user) -> None:
    user.user_permissions.remove(run_code_permission())


def submit_code(owner) -> Job:
    return services.submit(owner, "probe", "code", dict(CODE), {"device": "cpu", "count": 1})


def fresh(user):
    return type(user).objects.get(pk=user.pk)  # no cached permissions


def test_the_permission_says_it_has_the_server_accounts_rights_where_it_is_granted(staff):
    assert "all the rights of the server's account" in run_code_permission().name
    staff.is_superuser = True
    staff.save()
    client = Client()
    client.force_login(staff)
    page = client.get(f"/admin/auth/user/{staff.pk}/change/").content.decode()
    assert "all the rights of the server&#x27;s account" in page


def test_submitting_code_without_the_permission_is_refused(alice):
    with pytest.raises(services.ActionError) as refused:
        submit_code(alice)
    assert refused.value.status == 403
    assert "alice may not run this probe: it needs the permission “May run custom Python network code" \
        in refused.value.message
    assert not Job.objects.exists()


def test_a_job_of_code_records_its_owner_as_vouching_for_it_and_no_other_job_claims_a_voucher(alice, bob):
    grant(alice)
    assert submit_code(fresh(alice)).params[VOUCHED_BY] == alice.pk
    claimed = services.submit(bob, "probe", "no code", {"steps": 1, VOUCHED_BY: alice.pk}, {"device": "cpu", "count": 1})
    assert VOUCHED_BY not in claimed.params


def test_a_revoked_permission_stops_clones_and_resumes(alice):
    grant(alice)
    job = submit_code(fresh(alice))
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED)
    job.folder.mkdir(parents=True, exist_ok=True)
    (job.folder / "probe.state").write_text("")
    revoke(alice)
    alice = fresh(alice)
    for action in (services.clone, services.resume):
        with pytest.raises(services.ActionError, match="may not run this probe") as refused:
            action(Job.objects.get(pk=job.pk), alice)
        assert refused.value.status == 403
    assert Job.objects.count() == 1 and Job.objects.get(pk=job.pk).status == Status.FAILED


def test_a_worker_refuses_a_queued_job_whose_owner_lost_the_permission(alice, worker_factory):
    grant(alice)
    job = submit_code(fresh(alice))
    revoke(alice)
    worker_factory()
    job = wait_status(job, Status.FAILED)
    assert "alice may not run this probe: it needs the permission" in job.error
    assert not events_of(job, "started")


def test_job_processes_get_no_secrets_in_their_environment(alice, worker_factory):
    secrets = {"SECRET_KEY": "s3cret", "ADMIN_PASSWORD": "hunter2", "AWS_SECRET_ACCESS_KEY": "k", "API_TOKEN": "t",
               "DB_PASS": "p", "REDIS_PASS": "p", "APIKEY": "k", "MYSQL_PWD": "p"}
    worker_factory(**secrets, OMP_NUM_THREADS="2", LC_ALL="C.UTF-8")
    job = wait_status(submit_sleep(alice, steps=1), Status.DONE)
    names = set(events_of(job, "started")[0]["data"]["environment"])
    assert {"PATH", "PYTHONPATH", "OMP_NUM_THREADS", "LC_ALL"} <= names
    assert not names & {"DATABASE_URL", "REDIS_URL", *secrets}


def test_a_worker_refuses_a_claimed_job_whose_owner_lost_the_permission_while_it_waited(alice, bob, worker):
    grant(alice)
    busy = submit_sleep(bob, steps=600, step_seconds=0.1)  # holds the worker's one CPU slot
    wait_status(busy, Status.RUNNING)
    job = wait_status(submit_code(fresh(alice)), Status.WAITING)  # claimed, waiting for the slot
    revoke(alice)
    services.abort(busy, bob)
    job = wait_status(job, Status.FAILED, Status.DONE)
    assert job.status == Status.FAILED
    assert job.error.startswith("alice may not run this probe: it needs the permission")
    assert not events_of(job, "started")
