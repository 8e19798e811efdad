"""Adaptive searches (``training.searches``): trials asked of a real Optuna
study in the test database, each an ordinary model job; their validations
told to it as they land (written by hand here, as the trainer writes them),
the weak ones stopped at a rung, failed and ended jobs settled, more trials
on demand; the New model form and the API that start one; and a small
search through a real worker, every trial trained."""

from __future__ import annotations

import math

import optuna
import pytest
from django.test import Client

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.detectionfiles import make_detection_dataset
from tests.jobtools import events_of, wait_status
from tests.processes import wait_for
from tests.trainer.test_train import SLOW_LENET
from tests.trainfiles import make_dataset, train_config
from tests.training.test_training_runs import may_run_code, past_epoch
from trainer import eventkinds as kinds
from trainer import eventlog, jobfiles
from training import searches, searchstudy
from training.models import Search, Trial

SPACE = {"lr": [0.001, 0.1], "weight_decay": None, "batch_size": [16, 32], "solver": None, "network": None}


def dataset_job(owner) -> Job:
    job = Job.objects.create(kind="dataset", name="bars", owner=owner, status=Status.DONE)
    make_dataset(job.folder / jobfiles.DATASET)
    return job


def start_search(owner, trials: int = 5, parallel: int = 5, pruner: str = "median", **fields) -> Search:
    dataset = dataset_job(owner)
    base = train_config(dataset.folder / jobfiles.DATASET, dataset=dataset.pk, epochs=3)
    return searches.create(owner, "lr search", "lr search", base, {"device": "cpu", "count": 1},
                           fields.pop("space", SPACE), "random", pruner, fields.pop("metric", "val_top1"), trials,
                           parallel, "normal")


def validated(job: Job, values: list[float], status: str = Status.RUNNING) -> None:
    """The job ran (``status``) and validated once an epoch with these top-1 values."""
    job.folder.mkdir(parents=True, exist_ok=True)
    for epoch, top1 in enumerate(values, start=1):
        eventlog.append(job.folder, kinds.VAL, kinds.val(epoch * 10, float(epoch), {"loss": 1 - top1, "top1": top1,
                                                                                   "top5": 1.0}))
    Job.objects.filter(pk=job.pk).update(status=status)


def trials_of(search: Search) -> list[Trial]:
    return list(search.trial_set.select_related("job"))


def test_a_search_asks_its_first_trials_each_an_ordinary_model_job_in_its_group(transactional_db, alice):
    search = start_search(alice, trials=5, parallel=3)
    trials = trials_of(search)
    assert [trial.number for trial in trials] == [0, 1, 2]
    for trial in trials:
        job = trial.job
        assert job.kind == "train" and job.group == "lr search" and job.owner == alice and job.status == Status.QUEUED
        assert 0.001 <= job.params["lr"] <= 0.1 and job.params["batch_size"] in (16, 32)
        assert job.params["epochs"] == 3 and trial.params == {"lr": job.params["lr"], "batch_size": job.params["batch_size"]}
        assert job.name.startswith(f"lr search #{trial.number}: lr ")
    study = optuna.load_study(study_name=search.study, storage=searchstudy.storage())
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.RUNNING] * 3


def test_validations_are_told_the_weak_trial_stopped_at_its_rung_and_ended_jobs_settled(transactional_db, alice):
    search = start_search(alice)
    first, second, third, weak, failing = trials_of(search)
    for trial, values in ((first, [0.5, 0.6]), (second, [0.6, 0.7]), (third, [0.7, 0.9])):
        validated(trial.job, values, Status.DONE)
    validated(weak.job, [0.1])
    Job.objects.filter(pk=failing.job.pk).update(status=Status.FAILED, error="The trainer ran out of memory.")
    searches.advance(search)
    by_number = {trial.number: trial for trial in trials_of(search)}
    assert [by_number[n].state for n in range(5)] == ["complete", "complete", "complete", "pruned", "failed"]
    assert [by_number[n].value for n in range(3)] == [0.6, 0.7, 0.9]
    stopped = by_number[weak.number]
    assert stopped.rung == 1.0 and stopped.message.startswith("Stopped early by the search at validation 1 (epoch 1)")
    assert stopped.job.abort_requested and stopped.message in stopped.job.notes
    assert by_number[failing.number].message == "Its job ended failed: The trainer ran out of memory."
    study = optuna.load_study(study_name=search.study, storage=searchstudy.storage())
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE", "COMPLETE", "PRUNED", "FAIL"]
    assert study.best_value == 0.9 and study.trials[2].intermediate_values == {1: 0.7, 2: 0.9}

    data = searches.search_data(search)
    assert data["best"]["number"] == third.number and data["best"]["value"] == 0.9
    assert data["counts"] == {"running": 0, "complete": 3, "pruned": 1, "failed": 1} and not data["active"]
    assert set(data["importances"]) <= {"lr", "batch_size"} and math.isclose(sum(data["importances"].values()), 1.0)
    assert data["trials"][3]["values"] == [[1.0, 0.1]]


def test_a_trial_reported_once_is_not_reported_again_and_waits_for_more(transactional_db, alice):
    search = start_search(alice, trials=1, parallel=1, pruner="none")
    (trial,) = trials_of(search)
    validated(trial.job, [0.4])
    searches.advance(search)
    searches.advance(search)
    eventlog.append(trial.job.folder, kinds.VAL, kinds.val(20, 2.0, {"loss": 0.5, "top1": 0.5, "top5": 1.0}))
    searches.advance(search)
    study = optuna.load_study(study_name=search.study, storage=searchstudy.storage())
    assert study.trials[0].intermediate_values == {1: 0.4, 2: 0.5}
    assert Trial.objects.get(pk=trial.pk).reported == 2 and Trial.objects.get(pk=trial.pk).state == "running"


def test_more_trials_continue_the_search_and_a_claimed_search_is_left_alone(transactional_db, alice, bob):
    search = start_search(alice, trials=2, parallel=2)
    for trial in trials_of(search):
        validated(trial.job, [0.5], Status.DONE)
    searches.advance(search)
    assert not searches.active().filter(pk=search.pk).exists()
    with pytest.raises(searches.ActionError, match="Only the search's owner or staff"):
        searches.add_trials(search, bob, 1)
    with pytest.raises(searches.ActionError, match="at most 500 trials"):
        searches.add_trials(search, alice, 499)
    searches.add_trials(search, alice, 2)
    assert [trial.number for trial in trials_of(search)] == [0, 1, 2, 3]
    Search.objects.filter(pk=search.pk).update(advancing_until=search.created_at.replace(year=2100))
    searches.add_trials(search, alice, 1)  # another worker is advancing it: it makes the fifth
    assert len(trials_of(search)) == 4


def test_the_api_and_the_page_show_a_search_and_continue_it(transactional_db, alice, bob):
    search = start_search(alice, trials=2, parallel=1)
    owner, other = signed_in(alice), signed_in(bob)
    body = other.get(f"/api/searches/{search.pk}").json()
    assert body["metric_label"] == "validation top-1" and body["maximize"] and body["trials_wanted"] == 2
    assert body["compare_url"] == "/compare/?group=alice/lr search" and len(body["trials"]) == 1
    assert other.post(f"/api/searches/{search.pk}/more", {"trials": 1}, content_type="application/json").status_code == 403
    assert owner.post(f"/api/searches/{search.pk}/more", {"trials": 0}, content_type="application/json").status_code == 400
    more = owner.post(f"/api/searches/{search.pk}/more", {"trials": 2}, content_type="application/json")
    assert more.status_code == 200 and more.json()["trials_wanted"] == 4
    page = owner.get(f"/searches/{search.pk}/").content.decode()
    assert "training/search.js" in page and 'id="search-more"' in page
    assert 'id="search-more"' not in other.get(f"/searches/{search.pk}/").content.decode()
    continued = owner.post(f"/searches/{search.pk}/more", {"trials": "3"}, follow=True).content.decode()
    assert "continues with 3 more trial(s)" in continued
    assert owner.get("/api/searches/999999").status_code == 404
    assert Client().get(f"/api/searches/{search.pk}").status_code == 401


def _search_body(dataset: Job, **fields) -> dict:
    return {"name": "found", "dataset": dataset.pk, "network": {"source": "standard", "name": "lenet"}, "epochs": 2,
            "lr": 0.01, "batch_size": 32, "search": True, "search_lr_low": 0.001, "search_lr_high": 0.1,
            "search_batch_sizes": [16, 32], "search_trials": 3, "search_parallel": 1, "search_sampler": "tpe",
            "search_pruner": "asha", **fields}


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"search_lr_low": 0.1, "search_lr_high": 0.01}, "search_lr_low", "its start below its end"),
    ({"search_lr_high": None}, "search_lr_low", "Give a range above 0"),
    ({"search_batch_sizes": "64, many"}, "search_batch_sizes", "whole numbers separated by commas"),
    ({"search_networks": ["fasterrcnn_mobilenet_v3_large_fpn"]}, "search_networks", "Not networks for"),
    ({"search_parallel": 5}, "search_parallel", "More trials at once than trials in all"),
    ({"search_metric": "val_map"}, "search_metric", "does not report val_map"),
    ({"lr": [0.01, 0.1]}, "search", "A search draws its own learning rates"),
    ({"search_rotations": "5, 200"}, "search_rotations", "Each of the rotations is from 0 to 180."),
    ({"search_scales": "0.1, wide"}, "search_scales", "Give zooms as numbers separated by commas, e.g. 0, 0.1, 0.2."),
    ({"search_scales": "nan"}, "search_scales", "Each of the zooms is from 0 to 0.9."),
    ({"search_translates": [0, 2.5]}, "search_translates", "Give translations as whole numbers"),
    ({"search_color_jitters": "-0.1"}, "search_color_jitters", "Each of the colour jitters is from 0 to 1."),
    ({"search_flips": ["sideways"]}, "search_flips", "Select a valid choice"),
])
def test_the_form_refuses_a_search_it_cannot_run_saying_why(transactional_db, alice, fields, field, message):
    answer = signed_in(alice).post("/api/models", _search_body(dataset_job(alice), **fields),
                                   content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert message in " ".join(error["message"] for error in answer.json()["errors"].get(field, [])), answer.json()
    assert not Search.objects.exists() and not Job.objects.filter(kind="train").exists()


def test_a_search_draws_its_augmentation_from_the_choices_given(transactional_db, alice):
    augmentation = {"search_flips": ["none", "horizontal"], "search_translates": "0, 2", "search_rotations": [0, 15.5],
                    "search_scales": "0.1", "search_color_jitters": [0.2, 0.4]}
    answer = signed_in(alice).post("/api/models", _search_body(dataset_job(alice), search_trials=9,
                                                               search_parallel=9, **augmentation),
                                   content_type="application/json")
    assert answer.status_code == 201, answer.content
    search = Search.objects.get(pk=answer.json()["search"]["id"])
    assert {name: search.space[name] for name in ("flip", "translate", "rotation", "scale", "color_jitter")} == {
        "flip": ["none", "horizontal"], "translate": [0, 2], "rotation": [0.0, 15.5], "scale": [0.1],
        "color_jitter": [0.2, 0.4]}
    trials = trials_of(search)
    assert len(trials) == 9
    for trial in trials:
        params = trial.job.params
        assert params["flip"] in ("none", "horizontal") and params["translate"] in (0, 2)
        assert params["rotation"] in (0.0, 15.5) and params["scale"] == 0.1 and params["color_jitter"] in (0.2, 0.4)
        assert {name: params[name] for name in trial.params} == trial.params
        assert set(trial.params) == {"lr", "batch_size", "flip", "translate", "rotation", "scale", "color_jitter"}


def test_a_search_offers_a_task_only_the_augmentation_its_models_take(transactional_db, alice):
    """A detector takes a horizontal flip and no other augmentation: the
    search's choices are refused as the augmentation's own fields are."""
    dataset = Job.objects.create(kind="dataset", name="boxes", owner=alice, status=Status.DONE)
    make_detection_dataset(dataset.folder / jobfiles.DATASET)
    body = _search_body(dataset, network={"source": "standard", "name": "fasterrcnn_mobilenet_v3_large_fpn"},
                        search_flips=["horizontal", "vertical"], search_rotations="0, 10", search_translates="0")
    answer = signed_in(alice).post("/api/models", body, content_type="application/json")
    assert answer.status_code == 400, answer.content
    errors = {field: " ".join(error["message"] for error in found) for field, found in answer.json()["errors"].items()}
    assert errors["search_flips"].startswith("A model for object detection cannot use vertical: ")
    assert errors["search_rotations"].startswith("A model for object detection cannot use 10: ")
    assert "search_translates" not in errors  # 0 is no translation
    assert not Search.objects.exists()
    page = signed_in(alice).get("/models/new/").content.decode()
    assert all(f'name="{name}"' in page for name in ("search_flips", "search_translates", "search_rotations",
                                                       "search_scales", "search_color_jitters"))


@pytest.mark.one_database
def test_a_search_through_a_real_worker_trains_every_trial_and_finds_its_best(alice, worker):
    """Three trials of a LeNet on bars, one at a time, through the form's API:
    the worker advances the search at each heartbeat, each trial trains (or
    is stopped at a rung), and the search ends with its best."""
    dataset = dataset_job(alice)
    # LeNet learns the bars in two epochs from 0.05 to 0.15 on every seed tried (top-1 0.59 to 1.0 after
    # one epoch); below 0.01 it often stays under 0.5, so a wider range made the best's check a draw.
    body = _search_body(dataset, search_lr_low=0.05, search_lr_high=0.15)
    answer = signed_in(alice).post("/api/models", body, content_type="application/json")
    assert answer.status_code == 201, answer.content
    search = Search.objects.get(pk=answer.json()["search"]["id"])
    assert search.space == {"lr": [0.05, 0.15], "weight_decay": None, "batch_size": [16, 32], "solver": None,
                            "network": None, "flip": None, "translate": None, "rotation": None, "scale": None,
                            "color_jitter": None}

    def finished() -> bool:
        return not searches.active().filter(pk=search.pk).exists()

    wait_for(finished, timeout=600, every=1, what="the search's three trials to end")
    trials = trials_of(search)
    assert len(trials) == 3 and {trial.state for trial in trials} <= {"complete", "pruned"}
    for trial in trials:
        job = wait_status(trial.job, Status.DONE, Status.ABORTED, timeout=60)
        assert job.status == (Status.DONE if trial.state == "complete" else Status.ABORTED)
    data = searches.search_data(search)
    assert data["best"] is not None and data["best"]["value"] > 0.5
    assert signed_in(alice).get(f"/searches/{search.pk}/").status_code == 200


@pytest.mark.slow
@pytest.mark.one_database
def test_a_search_goes_on_when_the_worker_running_its_trial_dies(alice, worker_factory):
    """Two trials, one at a time, of a slowed LeNet: the worker training the
    first is killed (SIGKILL, as a crash would); a worker started in its
    place resumes the trial's job and, advancing the search at its
    heartbeats, tells the study how it ended and runs the second. Nothing
    of the search was in the dead worker: every trial ends recorded alike
    in the study and on the search's page."""
    doomed = worker_factory("doomed")
    may_run_code(alice)
    body = _search_body(dataset_job(alice), network={"source": "python", "text": SLOW_LENET}, epochs=3,
                        search_trials=2, search_parallel=1, search_pruner="none")
    answer = signed_in(type(alice).objects.get(pk=alice.pk)).post("/api/models", body, content_type="application/json")
    assert answer.status_code == 201, answer.content
    search = Search.objects.get(pk=answer.json()["search"]["id"])
    first = Trial.objects.get(search=search, number=0).job
    wait_for(lambda: events_of(first, "snapshot") and past_epoch(first, 1.3), timeout=120,
             what="the first trial's snapshot and training past epoch 1.3")
    doomed.kill()
    worker_factory("rescuer")
    wait_for(lambda: not searches.active().filter(pk=search.pk).exists(), timeout=600, every=1,
             what="the search's two trials to end under the new worker")
    trials = trials_of(search)
    assert [trial.state for trial in trials] == ["complete", "complete"]
    assert trials[0].job.attempt == 2 and len(events_of(trials[0].job, "resume")) == 1
    study = optuna.load_study(study_name=search.study, storage=searchstudy.storage())
    assert [(t.state, t.value) for t in study.trials] == [(optuna.trial.TrialState.COMPLETE, trial.value)
                                                          for trial in trials]


def test_the_median_rule_stops_no_trial_before_three_have_completed(transactional_db, alice):
    """``MEDIAN_STARTUP_TRIALS`` (3): with two complete, a weak trial runs on;
    the test above stops one once three have."""
    search = start_search(alice, trials=3, parallel=3)
    first, second, weak = trials_of(search)
    for trial, values in ((first, [0.5, 0.6]), (second, [0.6, 0.7])):
        validated(trial.job, values, Status.DONE)
    validated(weak.job, [0.1])
    searches.advance(search)
    assert Trial.objects.get(pk=weak.pk).state == "running" and searchstudy.MEDIAN_STARTUP_TRIALS == 3
