"""Every signed-in user sees every job; only the owner or staff change one.
Each change tried by another non-staff user is refused with 403, on the page
and in the API, and changes nothing."""

import html
import json

import pytest
from django.test import Client

from jobs.models import Job, Status

ACTIONS = [
    ("page abort", "post", "/jobs/{id}/abort", None),
    ("page clone", "post", "/jobs/{id}/clone", None),
    ("page delete", "post", "/jobs/{id}/delete", None),
    ("page edit", "post", "/jobs/{id}/edit", {"name": "mine now", "group": "g", "notes": "n"}),
    ("api abort", "post", "/api/jobs/{id}/abort", None),
    ("api clone", "post", "/api/jobs/{id}/clone", None),
    ("api delete", "delete", "/api/jobs/{id}", None),
    ("api rename", "patch", "/api/jobs/{id}", {"name": "mine now"}),
    ("api regroup", "patch", "/api/jobs/{id}", {"group": "other"}),
    ("api annotate", "patch", "/api/jobs/{id}", {"notes": "hello"}),
]


def snapshot(job):
    job.refresh_from_db()
    return (job.name, job.group, job.notes, job.status, job.abort_requested, Job.objects.count())


def make_job(owner, status):
    return Job.objects.create(kind="sleep", name="theirs", group="grp", notes="", owner=owner, params={},
                              resources={"device": "cpu", "count": 1}, status=status)


def call(client, method, url, body):
    if url.startswith("/api/"):
        return getattr(client, method)(url, data=json.dumps(body or {}), content_type="application/json")
    return getattr(client, method)(url, data=body or {})


@pytest.mark.parametrize("status", [Status.RUNNING, Status.DONE])
@pytest.mark.parametrize("name,method,url,body", ACTIONS, ids=[a[0] for a in ACTIONS])
def test_another_user_is_refused_and_nothing_changes(alice, bob, status, name, method, url, body):
    job = make_job(alice, status)
    before = snapshot(job)
    client = Client()
    client.force_login(bob)
    response = call(client, method, url.format(id=job.pk), body)
    assert response.status_code == 403
    assert "Only the job's owner or staff may change it." in html.unescape(response.content.decode())
    assert snapshot(job) == before


@pytest.mark.parametrize("name,method,url,body", [a for a in ACTIONS if "clone" not in a[0]],
                         ids=[a[0] for a in ACTIONS if "clone" not in a[0]])
def test_staff_may_change_anyones_job(alice, staff, name, method, url, body):
    job = make_job(alice, Status.FAILED if "delete" in name else Status.RUNNING)
    client = Client()
    client.force_login(staff)
    response = call(client, method, url.format(id=job.pk), body)
    assert response.status_code in (200, 202, 204, 302)


def test_everyone_signed_in_can_look(alice, bob):
    job = make_job(alice, Status.DONE)
    client = Client()
    client.force_login(bob)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200
    assert client.get(f"/api/jobs/{job.pk}").json()["owner"] == "alice"
    assert [j["id"] for j in client.get("/api/jobs").json()["jobs"]] == [job.pk]


def test_the_job_page_offers_changes_only_to_those_allowed(alice, bob):
    job = make_job(alice, Status.RUNNING)
    client = Client()
    client.force_login(bob)
    assert f"/jobs/{job.pk}/abort" not in client.get(f"/jobs/{job.pk}/").content.decode()
    client.force_login(alice)
    assert f"/jobs/{job.pk}/abort" in client.get(f"/jobs/{job.pk}/").content.decode()
