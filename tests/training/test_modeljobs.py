"""What a model is and what its task offers (``training/modeljobs.py``):
``offers`` and ``unavailable`` for one model, ``models_offering`` as a
query, for models with and without a recorded task, a task that offers
nothing and one the server does not know; and every feature that uses a
model asking it: a model of a task that offers nothing is refused by each
feature's page and API with the sentence saying so, and is still listed."""

from __future__ import annotations

import json

import pytest

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.evalfiles import model_with_snapshot
from trainer.targets import ClassLabels
from trainer.tasks import TASKS, Metric, Task, uses
from training import services
from training.modeljobs import models_offering, offers, unavailable

SENTENCES = {use: f"{uses.LABELS[use]} is not available for Bare models." for use in uses.USES}

# A series every run reader knows (``EVERY_SERIES`` is made at import, before a test adds its task).
SCORE = (Metric("top1", "score"),)


@pytest.fixture
def bare_task(monkeypatch):
    """A task that offers no use, registered for the test alone."""
    monkeypatch.setitem(TASKS, "bare", Task("bare", "Bare", metrics=SCORE, metrics_title="score", targets=ClassLabels(),
                                            training="", plan=""))


def model(owner, name: str, **params) -> Job:
    return Job.objects.create(kind="train", name=name, owner=owner, params=params)


def test_a_model_is_offered_what_its_task_offers_and_one_of_no_task_is_a_classification_one(alice, bare_task):
    classifiers = [model(alice, "no task"), model(alice, "null", task=None), model(alice, "empty", task=""),
                   model(alice, "named", task="classification")]
    bare, gone = model(alice, "bare", task="bare"), model(alice, "gone", task="sorting")
    for use in uses.USES - {uses.DETECT, uses.SEGMENT}:
        assert all(offers(job, use) for job in classifiers)
        assert not offers(bare, use) and not offers(gone, use)
        assert set(models_offering(use)) == set(classifiers)
    detector = model(alice, "detector", task="detection")
    assert not any(offers(job, uses.DETECT) for job in (*classifiers, bare, gone))
    assert list(models_offering(uses.DETECT)) == [detector]
    segmenter = model(alice, "segmenter", task="segmentation")
    assert not any(offers(job, uses.SEGMENT) for job in (*classifiers, bare, gone, detector))
    assert list(models_offering(uses.SEGMENT)) == [segmenter]


def test_the_query_lists_only_models_and_only_of_the_tasks_that_offer_the_use(alice, monkeypatch):
    monkeypatch.setitem(TASKS, "exporting", Task("exporting", "Exporting", metrics=SCORE, metrics_title="score",
                                                 targets=ClassLabels(), training="", plan="", export="",
                                                 model_uses=frozenset({uses.EXPORT})))
    exporting, classifier = model(alice, "exporting", task="exporting"), model(alice, "classifier")
    Job.objects.create(kind="dataset", name="a dataset", owner=alice)
    assert set(models_offering(uses.EXPORT)) == {exporting, classifier}
    assert list(models_offering(uses.CLASSIFY)) == [classifier]


def test_a_use_not_offered_says_so_in_a_sentence_naming_the_task(alice, bare_task):
    assert unavailable(model(alice, "classifier"), uses.CLASSIFY) == ""
    assert unavailable(model(alice, "bare", task="bare"), uses.CLASSIFY) == "Classify is not available for Bare models."
    assert unavailable(model(alice, "gone", task="sorting"), uses.EXPORT) == "Export is not available for “sorting” models."


def test_a_misspelt_use_raises_instead_of_answering_no(alice):
    classifier, gone = model(alice, "classifier"), model(alice, "gone", task="sorting")
    for ask in (lambda: offers(classifier, "clasify"), lambda: offers(gone, "clasify"),
                lambda: models_offering("clasify")):
        with pytest.raises(ValueError, match="There is no use “clasify”"):
            ask()


@pytest.fixture
def bare_model(alice, bare_task) -> Job:
    """A done model of the bare task with a snapshot and a dataset: all a feature needs, but its task's word."""
    model = model_with_snapshot(alice)
    model.params["task"] = "bare"
    model.save(update_fields=["params"])
    return model


def post_json(client, url: str, body: dict):
    return client.post(url, json.dumps(body), content_type="application/json")


def refused(response, use: str) -> None:
    """A 400 whose message, and the model field's, is the use's sentence."""
    assert response.status_code == 400, response.content
    answer = response.json()
    assert SENTENCES[use] in answer["error"], answer
    message = answer["errors"]["model"][0]
    assert (message["message"] if isinstance(message, dict) else message) == SENTENCES[use]


def test_every_feature_refuses_a_model_whose_task_offers_nothing_and_says_why(alice, bare_model):
    client, model = signed_in(alice), bare_model
    page = client.get(f"/jobs/{model.pk}/").content.decode()
    for use in uses.USES - {uses.DETECT, uses.SEGMENT}:  # a model that takes no one-image use is said not to classify
        assert SENTENCES[use] in page
    for action in ('id="classify-one"', 'id="detect-one"', 'id="segment-one"', 'id="evaluate-form"', 'id="classify-many"',
                   'id="download-archive"', 'id="make-pretrained"', 'id="snapshot-actions"'):
        assert action not in page

    for one, use in (("classify", uses.CLASSIFY), ("detect", uses.DETECT), ("segment", uses.SEGMENT)):
        one_page = client.get(f"/models/{model.pk}/{one}").content.decode()
        assert SENTENCES[use] in one_page and f'id="{one}-form"' not in one_page
        refused(post_json(client, f"/api/models/{model.pk}/{one}", {"split": "val", "index": 0}), use)

    refused(post_json(client, f"/api/models/{model.pk}/evaluate", {"split": "val"}), uses.EVALUATE)
    refused(post_json(client, "/api/evaluations", {"model": model.pk, "source": "split", "split": "val"}), uses.EVALUATE)
    new_evaluation = client.post("/evaluations/new/", {"model": model.pk, "source": "split", "split": "val", "top_n": 5,
                                                       "device": "cpu"}).content.decode()
    assert SENTENCES[uses.EVALUATE] in new_evaluation
    assert f'<option value="{model.pk}">' not in client.get("/evaluations/new/").content.decode()
    compared = post_json(client, f"/api/compare/{alice.username}/{model.group}", {"split": "val"}).json()
    assert compared["jobs"] == [] and compared["skipped"] == [f"{model.name}: {SENTENCES[uses.EVALUATE]}"]

    refused(post_json(client, f"/api/models/{model.pk}/export", {}), uses.EXPORT)
    refused(post_json(client, f"/api/models/{model.pk}/pretrained", {}), uses.PRETRAINED)
    assert model.pk not in [job["id"] for job in services.previous_jobs()]

    for button, use in (("evaluate", uses.EVALUATE), ("export", uses.EXPORT), ("pretrained", uses.PRETRAINED)):
        answer = client.post(f"/models/{model.pk}/{button}", {"split": "val", "snapshot": ""}, follow=True)
        assert answer.redirect_chain == [(f"/jobs/{model.pk}/", 302)]
        assert SENTENCES[use] in [str(message) for message in answer.context["messages"]]
    assert not Job.objects.exclude(kind__in=["train", "dataset"]).exists(), "nothing was queued"


def test_a_model_whose_task_offers_nothing_is_still_listed(alice, bare_model):
    client, model = signed_in(alice), bare_model
    listed = client.get("/api/jobs?category=models").json()
    assert model.pk in [job["id"] for job in listed["jobs"]]
    assert model.name in client.get("/").content.decode()
    assert model.pk in [job["id"] for job in client.get(f"/api/groups/{alice.username}/{model.group}").json()["jobs"]]
    assert client.get(f"/api/jobs/{model.pk}").json()["id"] == model.pk


def test_a_classification_model_keeps_every_action(alice):
    model = model_with_snapshot(alice, status=Status.DONE)
    page = signed_in(alice).get(f"/jobs/{model.pk}/").content.decode()
    for action in ('id="classify-one"', 'id="evaluate-form"', 'id="classify-many"', 'id="download-archive"',
                   'id="make-pretrained"'):
        assert action in page
    assert "is not available" not in page
    assert model.pk in [job["id"] for job in services.previous_jobs()]
