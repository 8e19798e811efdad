"""A model or dataset whose task this server does not know (made by another
version of the app, or its task withdrawn): every page and API address of
it answers with the sentence saying so, never a server error, and the
home page still lists it."""

from __future__ import annotations

import pytest

from jobs.models import Job, Status
from tests.clients import signed_in

SENTENCE = "There is no task “sorting”"


@pytest.fixture
def gone(alice):
    dataset = Job.objects.create(kind="dataset", name="sorted", owner=alice, status=Status.DONE,
                                 params={"task": "sorting"}, group="g")
    model = Job.objects.create(kind="train", name="sorter", owner=alice, status=Status.DONE, group="g",
                               params={"task": "sorting", "dataset": dataset.pk})
    return dataset, model


def test_every_address_of_a_job_of_an_unknown_task_answers_without_a_server_error(alice, gone):
    dataset, model = gone
    client, failed = signed_in(alice), []
    client.raise_request_exception = False
    for job in (dataset, model):
        for address in (f"/jobs/{job.pk}/", f"/api/jobs/{job.pk}", f"/api/jobs/{job.pk}/metrics",
                        f"/jobs/{job.pk}/profile", f"/api/jobs/{job.pk}/profile", f"/datasets/{job.pk}/explore",
                        f"/api/datasets/{job.pk}", f"/models/{job.pk}/evaluate", f"/models/{job.pk}/classify",
                        f"/models/{job.pk}/detect", f"/models/{job.pk}/export", f"/models/new/?clone={job.pk}",
                        f"/models/new/?dataset={job.pk}", "/groups/alice/g/", "/api/groups/alice/g",
                        "/compare/alice/g", "/api/compare/alice/g", "/", "/api/jobs", "/evaluations/new/"):
            answer = client.get(address)
            if answer.status_code >= 500:
                failed.append(address)
    assert not failed


def test_the_model_page_and_api_say_which_task_is_unknown_and_its_actions_are_refused_with_it(alice, gone):
    _, model = gone
    client = signed_in(alice)
    client.raise_request_exception = False
    page = client.get(f"/jobs/{model.pk}/")
    assert page.status_code == 200 and SENTENCE in page.content.decode()
    metrics = client.get(f"/api/jobs/{model.pk}/metrics")
    assert metrics.status_code == 409 and SENTENCE in metrics.json()["error"]
    failed = []
    for address in (f"/api/jobs/{model.pk}/clone", f"/api/jobs/{model.pk}/resume", f"/api/jobs/{model.pk}/restart",
                    f"/api/models/{model.pk}/evaluate", f"/api/models/{model.pk}/classify",
                    f"/api/models/{model.pk}/detect", "/api/compare/alice/g", f"/jobs/{model.pk}/clone",
                    f"/jobs/{model.pk}/resume", f"/models/{model.pk}/evaluate", f"/models/{model.pk}/export"):
        answer = client.post(address, {})
        if answer.status_code >= 500:
            failed.append(address)
    assert not failed
    assert Job.objects.filter(pk=model.pk, status=Status.DONE).exists()
    rename = client.post(f"/jobs/{model.pk}/edit", {"name": "renamed", "group": "g", "notes": ""})
    assert rename.status_code < 400 and Job.objects.get(pk=model.pk).name == "renamed"
    assert client.post(f"/jobs/{model.pk}/delete").status_code < 400
    assert not Job.objects.filter(pk=model.pk).exists()
