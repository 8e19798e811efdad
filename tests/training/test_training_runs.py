"""Training jobs through a real worker: a model trains to done, an aborted
model resumes from its checkpoint with the Resume action, a model whose
worker dies resumes on another worker, and a model whose trainer is killed
outright resumes from its last snapshot by itself, each with one unbroken
metric history; the worker keeps an ended model's comparison summary."""

from __future__ import annotations

import json
import os
import signal

import pytest
from django.contrib.auth.models import Permission

from jobs import services
from jobs.models import Job, Status
from tests.jobtools import events_of, history, pids_running, wait_status
from tests.processes import wait_for
from tests.trainer.test_train import SLOW_LENET
from tests.trainfiles import make_dataset, train_config
from trainer import jobfiles
from trainer.tasks import task_of
from training import runsummary, series


def dataset_job(owner) -> Job:
    job = Job.objects.create(kind="dataset", name="bars", owner=owner, status=Status.DONE)
    make_dataset(job.folder / jobfiles.DATASET)
    return job


def may_run_code(user) -> None:
    """SLOW_LENET is a network written in Python."""
    user.user_permissions.add(Permission.objects.get(content_type__app_label="training", codename="run_code"))


def submit_model(owner, dataset: Job, name: str = "lenet", **overrides) -> Job:
    if (overrides.get("network") or {}).get("source") == "python":
        may_run_code(owner)
        owner = type(owner).objects.get(pk=owner.pk)
    params = train_config(dataset.folder / jobfiles.DATASET, dataset=dataset.pk, **overrides)
    return services.submit(owner, "train", name, params, {"device": "cpu", "count": 1})


def train_steps(job: Job) -> list[int]:
    return [e["data"]["step"] for e in events_of(job, "train")]


def past_epoch(job: Job, epoch: float) -> bool:
    return any(e["data"]["epoch"] > epoch for e in events_of(job, "train"))


def test_a_model_trains_to_done_and_its_page_shows_it(alice, worker, client):
    model = submit_model(alice, dataset_job(alice), epochs=2)
    model = wait_status(model, Status.DONE, timeout=120)
    assert model.progress == 1.0
    result = events_of(model, "result")[-1]["data"]
    assert result["final"]["val_top1"] >= 0.9
    client.force_login(alice)
    page = client.get(f"/jobs/{model.pk}/")
    assert page.status_code == 200
    assert b"Download model" in page.content
    kept = model.folder / runsummary.SUMMARY_FILE  # kept by the worker once the job ended, for the Compare page
    wait_for(kept.exists, timeout=30, what="the worker to keep the model's comparison summary")
    summary = json.loads(kept.read_text())
    assert summary["final"]["val_top1"] == result["final"]["val_top1"] and set(summary["curves"]) >= {"val_top1"}


def test_an_aborted_model_resumes_where_it_stopped(alice, worker):
    model = submit_model(alice, dataset_job(alice), epochs=3, network={"source": "python", "text": SLOW_LENET})
    wait_for(lambda: past_epoch(model, 1.2), timeout=90, what="training to pass epoch 1.2")
    services.abort(model, alice)
    model = wait_status(model, Status.ABORTED, timeout=30)
    assert (model.folder / "checkpoints" / "last.pt").exists()

    services.resume(model, alice)
    model = wait_status(model, Status.DONE, timeout=120)
    assert history(model)[-4:] == ["queued", "waiting", "running", "done"]
    assert len(events_of(model, "resume")) == 1
    steps = train_steps(model)
    assert steps == sorted(set(steps)), "no step twice"
    curve = series.view(model.folder, lambda run: run.metrics(task_of({}), 10_000))["series"]["train_loss"]
    curve_steps = [point[0] for point in curve]
    assert curve_steps == sorted(set(curve_steps))
    assert [round(e["data"]["epoch"], 6) for e in events_of(model, "val")] == [1.0, 2.0, 3.0]


@pytest.mark.slow
def test_a_model_whose_worker_dies_resumes_on_another_worker(alice, worker_factory):
    doomed = worker_factory("doomed")
    model = submit_model(alice, dataset_job(alice), epochs=3, network={"source": "python", "text": SLOW_LENET})
    wait_for(lambda: events_of(model, "snapshot") and past_epoch(model, 1.3), timeout=90,
             what="a snapshot and training past epoch 1.3")
    doomed.kill()
    worker_factory("rescuer")
    model = wait_status(model, Status.DONE, timeout=120)
    assert model.attempt == 2
    resumed = events_of(model, "resume")
    # The supervisor passes SIGTERM on when its worker dies, so the trainer
    # saves where it was; a SIGKILLed trainer would resume from its snapshot.
    assert len(resumed) == 1 and resumed[0]["data"]["epoch"] >= 1.0
    events = events_of(model)
    requeued = [e["data"] for e in events if e["kind"] == "status" and e["data"]["status"] == "queued"][-1]
    assert requeued["progress"] > 0.3, "the bar stays where the lost run was (past epoch 1.3 of 3), not at 0"
    first = next(e["data"] for e in events if e["kind"] == "progress" and e["seq"] > resumed[0]["seq"])
    assert first["epoch"] == resumed[0]["data"]["epoch"], "the resumed run's bar starts where it resumed"
    curve = series.view(model.folder, lambda run: run.metrics(task_of({}), 10_000))["series"]["train_loss"]
    steps = [point[0] for point in curve]
    assert steps == sorted(set(steps)), "the interrupted run's later points are dropped"
    assert [round(e["data"]["epoch"], 6) for e in events_of(model, "val")][-2:] == [2.0, 3.0]


def test_a_model_whose_trainer_is_killed_resumes_from_its_snapshot_by_itself(alice, worker):
    model = submit_model(alice, dataset_job(alice), epochs=4, network={"source": "python", "text": SLOW_LENET})
    trainer = wait_for(lambda: pids_running(model.folder, "trainer.train"), timeout=60, what="the trainer's process")
    wait_for(lambda: events_of(model, "snapshot") and past_epoch(model, 1.3), timeout=90,
             what="a snapshot and training past epoch 1.3")
    os.kill(trainer[0], signal.SIGKILL)  # as the out-of-memory killer would: no chance to save
    model = wait_status(model, Status.DONE, timeout=120)
    assert history(model) == ["queued", "waiting", "running", "queued", "waiting", "running", "done"]
    assert model.attempt == 2

    events = events_of(model)
    resumed = [e for e in events if e["kind"] == "resume"]
    assert len(resumed) == 1
    resumed_at, resumed_seq = resumed[0]["data"]["step"], resumed[0]["seq"]
    snapshots = [e["data"]["step"] for e in events if e["kind"] == "snapshot" and e["seq"] < resumed_seq]
    assert resumed_at == snapshots[-1], "from the last snapshot"
    before = [e["data"]["step"] for e in events if e["kind"] == "train" and e["seq"] < resumed_seq]
    after = [e["data"]["step"] for e in events if e["kind"] == "train" and e["seq"] > resumed_seq]
    assert before[-1] > resumed_at, "the killed run had trained past its snapshot"
    curve = series.view(model.folder, lambda run: run.metrics(task_of({}), 10_000))["series"]["train_loss"]
    assert [point[0] for point in curve] == [s for s in before if s <= resumed_at] + after, \
        "every point up to the snapshot, then the resumed run's: no gap, no step twice"
    assert [round(e["data"]["epoch"], 6) for e in events_of(model, "val")][-2:] == [3.0, 4.0]
