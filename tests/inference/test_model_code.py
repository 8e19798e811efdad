"""A model's network written in Python runs as code wherever it is built:
in an evaluation (Evaluate, Classify many, Compare), an export, a
pretrained model made of it, and the model server for Classify one. Each
refuses a user without the run-code permission (403 in the API, the
message on the page), unless a user holding it vouched for the code: the
model's owner, who held it when the model was submitted, while they hold
it still."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.models import Job
from jobs.permissions import VOUCHED_BY
from tests.clients import signed_in
from tests.evalfiles import imports, model_with_snapshot, trained_model, write_bars
from tests.inferfiles import bar_images
from tests.modelservers import model_server  # noqa: F401  (the fixture)

CODE = ("def build(channels, classes, height, width):\n"
        "    return nn.Sequential(nn.Flatten(), nn.Linear(channels * height * width, classes))\n")
PYTHON = {"source": "python", "text": CODE}
REFUSED = "bob may not"
WHY = "is code that runs with the server account"


def run_code(user, granted: bool = True) -> None:
    permission = Permission.objects.get(content_type__app_label="training", codename="run_code")
    if granted:
        user.user_permissions.add(permission)
    else:
        user.user_permissions.remove(permission)


def python_model(owner, vouched: bool) -> Job:
    """A model of ``owner``'s (who may run code) whose network is Python,
    recorded as vouched for by them or, like one submitted before the record
    was kept, not."""
    run_code(owner)
    model = model_with_snapshot(owner)
    model.params["network"] = PYTHON
    if vouched:
        model.params[VOUCHED_BY] = owner.pk
    model.save(update_fields=["params"])
    return model


def post(client, url: str, body: dict):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def api_requests(model: Job) -> dict[str, tuple[str, dict]]:
    listed = write_bars(imports() / "listed", [0, 1])
    return {
        "evaluate": (f"/api/models/{model.pk}/evaluate", {}),
        "classify many": ("/api/evaluations", {"model": model.pk, "source": "list",
                                               "list_text": "\n".join(str(path) for path in listed)}),
        "export": (f"/api/models/{model.pk}/export", {}),
        "pretrained": (f"/api/models/{model.pk}/pretrained", {}),
    }


def classify_one(client, model: Job):
    image = SimpleUploadedFile("image.png", bar_images(1)[0][0])
    return client.post(f"/api/models/{model.pk}/classify", {"image": image})


def test_code_nobody_vouches_for_is_refused_to_a_user_who_may_not_run_code(alice, bob):
    model = python_model(alice, vouched=False)
    client = signed_in(bob)
    for what, (url, body) in api_requests(model).items():
        response = post(client, url, body)
        assert response.status_code == 403, (what, response.content)
        assert response.json()["error"].startswith(REFUSED) and WHY in response.json()["error"], what
    response = classify_one(client, model)
    assert response.status_code == 403, response.content
    assert response.json()["error"].startswith("bob may not classify with it") and WHY in response.json()["error"]
    compared = post(client, "/api/compare/alice/sweep", {"split": "val"})
    assert compared.json()["jobs"] == [] and compared.json()["skipped"][0].startswith("lenet: bob may not evaluate it")
    assert not Job.objects.exclude(kind__in=["train", "dataset"]).exists()

    for url in (f"/models/{model.pk}/evaluate", f"/models/{model.pk}/export", f"/models/{model.pk}/pretrained"):
        page = client.post(url, {"split": "val"})
        assert page.status_code == 403, url
        assert "bob may not run this" in page.content.decode(), url
    page = client.get(f"/models/{model.pk}/classify").content.decode()
    assert "bob may not classify with it" in page and 'id="classify-form"' not in page
    assert not Job.objects.exclude(kind__in=["train", "dataset"]).exists()


def test_a_user_who_may_run_code_uses_code_nobody_vouches_for(alice, bob):
    model = python_model(alice, vouched=False)
    run_code(bob)
    client = signed_in(bob)
    for what, (url, body) in api_requests(model).items():
        assert post(client, url, body).status_code == 201, what


def test_code_vouched_for_is_used_by_anyone_until_the_voucher_loses_the_permission(alice, bob):
    model = python_model(alice, vouched=True)
    client = signed_in(bob)
    for what, (url, body) in api_requests(model).items():
        assert post(client, url, body).status_code == 201, what
    run_code(alice, granted=False)
    Job.objects.exclude(kind__in=["train", "dataset"]).delete()
    for what, (url, body) in api_requests(model).items():
        assert post(client, url, body).status_code == 403, what


@pytest.mark.usefixtures("model_server")
def test_classify_one_answers_with_vouched_code_and_refuses_code_nobody_vouches_for(alice, bob):
    run_code(alice)
    model = trained_model(alice, epochs=1, network=PYTHON)
    client = signed_in(bob)
    assert classify_one(client, model).status_code == 403
    model.params[VOUCHED_BY] = alice.pk
    model.save(update_fields=["params"])
    response = classify_one(client, model)
    assert response.status_code == 200, response.content
    assert len(response.json()["top"]) == 4
