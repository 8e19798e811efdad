"""What a model is and what its task offers (``training/modeljobs.py``):
``offers`` and ``unavailable`` for one model, ``models_offering`` as a
query, for models with and without a recorded task, a task that offers
nothing and one the server does not know."""

from __future__ import annotations

import pytest

from jobs.models import Job
from trainer.tasks import TASKS, Task, uses
from training.modeljobs import models_offering, offers, unavailable


@pytest.fixture
def bare_task(monkeypatch):
    """A task that offers no use, registered for the test alone."""
    monkeypatch.setitem(TASKS, "bare", Task("bare", "Bare", metrics=(), metrics_title="score"))


def model(owner, name: str, **params) -> Job:
    return Job.objects.create(kind="train", name=name, owner=owner, params=params)


def test_a_model_is_offered_what_its_task_offers_and_one_of_no_task_is_a_classification_one(alice, bare_task):
    classifiers = [model(alice, "no task"), model(alice, "null", task=None), model(alice, "empty", task=""),
                   model(alice, "named", task="classification")]
    bare, gone = model(alice, "bare", task="bare"), model(alice, "gone", task="sorting")
    for use in uses.USES:
        assert all(offers(job, use) for job in classifiers)
        assert not offers(bare, use) and not offers(gone, use)
        assert set(models_offering(use)) == set(classifiers)


def test_the_query_lists_only_models_and_only_of_the_tasks_that_offer_the_use(alice, monkeypatch):
    monkeypatch.setitem(TASKS, "exporting", Task("exporting", "Exporting", metrics=(), metrics_title="score",
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
