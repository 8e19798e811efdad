"""The job-kind registry: a kind that an app registers (here the ``probe``
kind of ``tests/jobkinds.py``) gets its tab, its creation over the API, its
resuming, the dependents check and its summary extras from ``jobs/``, which
names no kind."""

import html
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs import groups, kinds, services
from jobs.models import Job, Status
from tests.clients import signed_in
from tests.jobtools import wait_status
from trainer import eventlog


def post_json(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def probe(owner, status=Status.DONE, **params) -> Job:
    return Job.objects.create(kind="probe", name=params.pop("name", "probe"), owner=owner, params=params,
                              resources={"device": "cpu", "count": 1}, status=status)


def embedded(response, element_id: str):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', response.content.decode())
    return json.loads(match.group(1))


def test_the_apps_categories_make_the_home_tabs_in_their_order(alice):
    assert [c.name for c in kinds.categories()] == ["datasets", "models", "pretrained", "evaluations", "checks", "probes"]
    probe(alice, name="mine")
    home = signed_in(alice).get("/")
    tabs = embedded(home, "tabs-data")
    assert [(t["id"], t["label"]) for t in tabs] == [
        ("datasets", "Datasets"), ("models", "Models"), ("pretrained", "Pretrained models"), ("evaluations", "Evaluations"),
        ("checks", "Device checks"), ("probes", "Probes")]
    assert [t["group_link"] for t in tabs] == ["", "compare curves", "", "", "", "probe the group"]
    assert [j["name"] for j in tabs[5]["jobs"]] == ["mine"]
    assert embedded(home, "active-tab") == "probes"  # the first tab with jobs


def test_the_home_page_links_each_kinds_new_page_in_tab_order(alice):
    html = signed_in(alice).get("/").content.decode()
    links = re.findall(r'<a class="button" href="([^"]+)">(New [^<]+)</a>', html)
    assert links == [("/datasets/new/", "New dataset"), ("/models/new/", "New model"),
                     ("/pretrained/new/", "New pretrained model"), ("/evaluations/new/", "New evaluation"),
                     ("/checks/new/", "New device check")]


def test_a_kind_is_created_over_the_api_with_its_form(alice):
    client = signed_in(alice)
    created = post_json(client, "/api/jobs", {"kind": "probe", "name": "by api"})
    assert created.status_code == 201
    body = created.json()
    assert (body["kind"], body["category"], body["params"]["steps"]) == ("probe", "probes", 3)
    assert [j["name"] for j in client.get("/api/jobs?category=probes").json()["jobs"]] == ["by api"]
    refused = post_json(client, "/api/jobs", {"kind": "sleep", "name": "x"})
    assert refused.status_code == 400 and refused.json()["errors"]["kind"] == ["Choose one of: devicecheck, probe."]
    pointed = post_json(client, "/api/jobs", {"kind": "dataset", "name": "x"})
    assert pointed.json()["errors"]["kind"] == ["Create dataset jobs with POST /api/datasets."]


def test_a_kind_resumes_from_the_file_it_names(alice):
    job = probe(alice, Status.FAILED)
    assert not services.resumable(job)
    with pytest.raises(services.ActionError, match=re.escape("no checkpoint (probe.state)")):
        services.resume(job, alice)
    Path(job.folder).mkdir(parents=True)
    (job.folder / "probe.state").write_text("step 2")
    assert services.resumable(job) and signed_in(alice).get(f"/api/jobs/{job.pk}").json()["resumable"]
    services.resume(job, alice)
    assert Job.objects.get(pk=job.pk).status == Status.QUEUED
    check = Job.objects.create(kind="devicecheck", name="c", owner=alice, params={}, resources={}, status=Status.FAILED)
    with pytest.raises(services.ActionError, match="A device check job cannot be resumed"):
        services.resume(check, alice)


def test_a_job_that_others_depend_on_is_deleted_and_they_are_told(alice, bob):
    used = probe(alice, name="used")
    user = probe(bob, Status.FAILED, name="user", probe=used.pk)
    assert signed_in(alice).delete(f"/api/jobs/{used.pk}").status_code == 204
    user.refresh_from_db()
    notice = f"Its probe “used” (#{used.pk}) was deleted by alice."
    assert user.lost_dependencies == [{"id": used.pk, "label": "Probe", "name": "used", "by": "alice"}]
    told = [e["data"] for e in eventlog.read_all(user.folder) if e["kind"] == "dependency_deleted"]
    assert told == [{"id": used.pk, "label": "Probe", "name": "used", "by": "alice", "message": notice}]
    client = signed_in(bob)
    assert notice in html.unescape(client.get(f"/jobs/{user.pk}/").content.decode())
    assert client.get(f"/api/jobs/{user.pk}").json()["lost_dependencies"] == [notice]
    refused = client.post(f"/api/jobs/{user.pk}/clone")
    assert refused.status_code == 409 and refused.json()["error"] == f"{notice} The job cannot be cloned."
    Path(user.folder / "probe.state").write_text("")
    refused = client.post(f"/api/jobs/{user.pk}/resume")
    assert refused.status_code == 409 and refused.json()["error"] == f"{notice} The job cannot be resumed."


def test_a_queued_job_whose_dependency_was_deleted_fails_with_the_reason(alice, worker_factory):
    used = probe(alice, name="used")
    user = services.submit(alice, "probe", "user", {"probe": used.pk, "steps": 1}, {"device": "cpu", "count": 1})
    used_id = used.pk
    services.delete(used, alice)
    worker_factory()
    user = wait_status(user, Status.FAILED)
    assert user.error == f"Its probe “used” (#{used_id}) was deleted by alice. The job cannot run without it."


def test_a_summary_carries_what_its_kind_adds_and_nothing_of_other_kinds(alice):
    probe(alice, name="probe", steps=7, line=[3.0, 2.5])
    Job.objects.create(kind="devicecheck", name="check", owner=alice, params={}, resources={})
    client = signed_in(alice)
    jobs = {j["name"]: j for j in client.get("/api/jobs").json()["jobs"]}
    assert jobs["probe"]["probe_steps"] == 7 and jobs["probe"]["sparkline"] == [3.0, 2.5]
    assert "probe_steps" not in jobs["check"] and "sparkline" not in jobs["check"]
    drawn = embedded(client.get("/?tab=probes"), "sparklines-data")
    assert drawn == {"train": {"label": "train loss", "live_field": "loss"},
                     "probe": {"label": "probe line", "live_field": "progress"}}


def test_every_kind_names_a_registered_category(db):
    assert kinds.check_categories() == []
    call_command("check", fail_level="ERROR")


def test_groups_link_the_page_an_app_registers_and_only_that(alice, monkeypatch):
    job = probe(alice, name="grouped")
    Job.objects.filter(pk=job.pk).update(group="g/1")
    client = signed_in(alice)
    assert client.get(f"/api/jobs/{job.pk}").json()["group_url"] == "/groups/alice/g/1/"
    assert 'group <a href="/groups/alice/g/1/">g/1</a>' in client.get(f"/jobs/{job.pk}/").content.decode()
    monkeypatch.setattr(groups, "_page", None)
    assert client.get(f"/api/jobs/{job.pk}").json()["group_url"] is None
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert " · group g/1 · " in page and "/groups/" not in page
