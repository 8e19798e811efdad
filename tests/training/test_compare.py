"""Models compared side by side (``training.compare``) over the API: the
selection (ids, a group, a filter), the settings that differ, the legends,
final and best metrics, the curves downsampled on the server, and the
summaries kept per process until a run writes again. Events are written by
hand, as the trainer writes them; no worker runs."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from jobs.models import Job, Status
from tests.clients import signed_in
from trainer import eventkinds as kinds
from trainer import eventlog
from training import compare, runsummary

PARAMS = {"dataset": 1, "network": {"source": "standard", "name": "lenet"}, "epochs": 2, "lr": 0.01,
          "batch_size": 64, "solver": "sgd", "lr_policy": {"name": "step", "step_percent": 33}}


def model(owner, name: str, group: str = "", status: str = Status.DONE, **params) -> Job:
    job = Job.objects.create(kind="train", name=name, group=group, owner=owner, params={**PARAMS, **params},
                             resources={"device": "cpu", "count": 1}, status=status)
    job.folder.mkdir(parents=True)
    return job


def record(job: Job, vals: list[float], steps_per_epoch: int = 10) -> None:
    """A train loss every step, and a validation at each epoch's end with ``vals`` as its top-1."""
    for epoch, top1 in enumerate(vals, start=1):
        for step in range((epoch - 1) * steps_per_epoch + 1, epoch * steps_per_epoch + 1):
            eventlog.append(job.folder, kinds.TRAIN, kinds.train(step, step / steps_per_epoch, 1.0 / step, 0.01, 64,
                                                                 100.0, 0.1))
        eventlog.append(job.folder, kinds.VAL, kinds.val(epoch * steps_per_epoch, float(epoch),
                                                         {"loss": 1.0 - top1, "top1": top1, "top5": 1.0}))


def get(client, query: str):
    return client.get(f"/api/compare?{query}")


def test_the_runs_come_with_the_settings_that_differ_first_and_legends_naming_them(alice):
    slow = model(alice, "slow", lr=0.001)
    fast = model(alice, "fast", lr=0.1, batch_size=128)
    record(slow, [0.5, 0.6, 0.55])
    record(fast, [0.7, 0.9, 0.8])
    body = get(signed_in(alice), f"ids={slow.pk},{fast.pk}").json()
    assert body["count"] == 2 and body["url"] == f"/compare/?ids={slow.pk}%2C{fast.pk}"
    differing = [setting["key"] for setting in body["settings"] if setting["differs"]]
    assert differing == ["lr", "batch_size"]
    assert {s["key"] for s in body["settings"]} >= {"network.name", "lr_policy.name", "solver", "epochs"}
    lr = next(s for s in body["settings"] if s["key"] == "lr")
    assert lr == {"key": "lr", "differs": True, "numeric": True, "log": True}
    runs = {run["name"]: run for run in body["runs"]}
    assert runs["fast"]["label"] == "lr 0.1, batch_size 128" and runs["slow"]["label"] == "lr 0.001, batch_size 64"
    assert runs["fast"]["settings"]["network.name"] == "lenet" and runs["fast"]["url"] == f"/jobs/{fast.pk}/"
    assert runs["fast"]["final"]["val_top1"] == 0.8 and runs["fast"]["best"]["val_top1"] == {"value": 0.9, "epoch": 2.0}
    assert runs["fast"]["best"]["val_loss"]["value"] == pytest.approx(0.1)
    assert runs["fast"]["curves"]["val_top1"] == [[1.0, 0.7], [2.0, 0.9], [3.0, 0.8]]
    assert [m["key"] for m in body["metrics"]] == ["val_top1", "val_top5", "val_loss", "train_loss"]


def test_a_group_and_a_filter_select_models_only_and_together_with_ids(alice, bob):
    a = model(alice, "a", group="sweep")
    b = model(alice, "b", group="sweep", lr=0.02)
    model(bob, "bobs", group="sweep")
    Job.objects.create(kind="devicecheck", name="check", group="sweep", owner=alice, params={}, resources={})
    other = model(bob, "tuned resnet", status=Status.FAILED)
    client = signed_in(bob)  # anyone signed in may look at anyone's models
    assert [run["name"] for run in get(client, "group=alice/sweep").json()["runs"]] == ["a", "b"]
    assert [run["name"] for run in get(client, "q=resnet").json()["runs"]] == ["tuned resnet"]
    assert [run["name"] for run in get(client, "status=failed").json()["runs"]] == ["tuned resnet"]
    together = get(client, f"group=alice/sweep&ids={other.pk},{a.pk}").json()
    assert [run["name"] for run in together["runs"]] == ["a", "b", "tuned resnet"]
    assert b.pk in [run["id"] for run in together["runs"]]


@pytest.mark.parametrize(("query", "message"), [
    ("", "Select models to compare"),
    ("ids=1,x", "give job numbers separated by commas"),
    ("group=nobody", "give it as owner/group"),
    ("ids=0", "a whole number from 1 on"),
    (f"ids={2**63}", "a whole number from 1 on"),
])
def test_a_selection_that_cannot_be_shown_is_refused_with_a_message(alice, query, message):
    answer = get(signed_in(alice), query)
    assert answer.status_code == 400 and message in answer.json()["errors"]["selection"][0]


def test_more_models_than_the_page_takes_are_refused_and_as_many_are_shown(alice, monkeypatch):
    monkeypatch.setattr(compare, "MAX_RUNS", 3)
    for i in range(4):
        model(alice, f"m{i}", group="big")
    refused = get(signed_in(alice), "group=alice/big")
    assert refused.status_code == 400
    assert "holds 4 models; at most 3" in refused.json()["errors"]["selection"][0]
    Job.objects.filter(name="m3").delete()
    assert get(signed_in(alice), "group=alice/big").json()["count"] == 3
    assert "at most 3 models" in get(signed_in(alice), "ids=1,2,3,4").json()["errors"]["selection"][0]


def test_each_curve_gets_its_share_of_the_points_keeping_its_spikes(alice):
    spiky = model(alice, "spiky")
    record(spiky, [0.5] * 40 + [0.99] + [0.5] * 59)  # 100 validations, one spike
    client = signed_in(alice)
    body = get(client, f"ids={spiky.pk}&points=20").json()
    curve = body["runs"][0]["curves"]["val_top1"]
    assert body["points"] == 20 and len(curve) <= 20 and [41.0, 0.99] in curve
    assert len(get(client, f"ids={spiky.pk}").json()["runs"][0]["curves"]["val_top1"]) == 100
    assert get(client, f"ids={spiky.pk}&points=many").status_code == 400


def test_the_points_per_run_shrink_with_the_count_between_their_bounds():
    assert compare.points_per_run(1) == compare.MAX_POINTS
    assert compare.points_per_run(compare.POINTS_BUDGET // compare.MAX_POINTS) == compare.MAX_POINTS
    assert compare.points_per_run(compare.POINTS_BUDGET // compare.MAX_POINTS + 1) < compare.MAX_POINTS
    assert compare.points_per_run(1000) == 40
    assert compare.points_per_run(compare.POINTS_BUDGET // compare.MIN_POINTS) == compare.MIN_POINTS
    assert compare.points_per_run(10 * compare.POINTS_BUDGET) == compare.MIN_POINTS


@pytest.mark.parametrize(("values", "log"), [([0.001, 0.0999], False), ([0.001, 0.1], True), ([0, 10], False)])
def test_a_numeric_setting_is_drawn_on_a_log_axis_when_its_values_span_100_times(values, log):
    runs = [{"settings": {"lr": value}} for value in values]
    assert compare.describe_settings(runs)[0]["log"] is log


def test_a_setting_a_run_lacks_differs_and_lists_and_code_are_compared_as_text():
    runs = [{"settings": compare.flat_settings({"lr": 0.1, "milestones": [1, 2],
                                                "network": {"source": "python", "code": "x = 1"}})},
            {"settings": compare.flat_settings({"lr": 0.1, "milestones": [1, 2], "momentum": 0.9,
                                                "network": {"source": "python", "code": "x = 2"}})}]
    described = {s["key"]: s for s in compare.describe_settings(runs)}
    assert described["momentum"]["differs"] and not described["lr"]["differs"]
    assert described["milestones"] == {"key": "milestones", "differs": False, "numeric": False, "log": False}
    assert "network.code" not in described
    assert compare.legend(runs[1]["settings"], ["momentum"]) == "momentum 0.9"
    assert compare.legend(runs[0]["settings"], ["momentum"]) == "momentum —"


def test_a_runs_summary_is_kept_until_its_events_change(alice):
    running = model(alice, "running", status=Status.RUNNING)
    record(running, [0.5])
    client = signed_in(alice)
    first = get(client, f"ids={running.pk}").json()["runs"][0]
    assert first["final"]["val_top1"] == 0.5
    assert get(client, f"ids={running.pk}").json()["runs"][0] == first
    eventlog.append(running.folder, kinds.VAL, kinds.val(20, 2.0, {"loss": 0.1, "top1": 0.9, "top5": 1.0}))
    again = get(client, f"ids={running.pk}").json()["runs"][0]
    assert again["final"]["val_top1"] == 0.9 and again["best"]["val_top1"]["epoch"] == 2.0


def test_an_ended_runs_summary_is_kept_in_its_folder_and_read_from_there_by_a_new_process(alice):
    done, running = model(alice, "done"), model(alice, "running", status=Status.RUNNING)
    record(done, [0.5, 0.7])
    record(running, [0.4])
    client = signed_in(alice)

    def final(job: Job) -> float:
        runsummary.SUMMARIES.entries.clear()  # as in a web process that has just started
        return next(run for run in get(client, f"ids={done.pk},{running.pk}").json()["runs"]
                    if run["id"] == job.pk)["final"]["val_top1"]

    assert final(done) == 0.7 and final(running) == 0.4
    path = done.folder / runsummary.SUMMARY_FILE
    kept = json.loads(path.read_text())
    stat = (done.folder / eventlog.FILENAME).stat()
    assert kept["events"] == [stat.st_size, stat.st_mtime_ns] and kept["final"]["val_top1"] == 0.7
    assert not (running.folder / runsummary.SUMMARY_FILE).exists()  # still writing: read again as it writes
    kept["final"]["val_top1"] = 0.75  # changed by hand: shows the file is read, not the events
    path.write_text(json.dumps(kept))
    assert final(done) == 0.75
    eventlog.append(done.folder, kinds.VAL, kinds.val(30, 3.0, {"loss": 0.1, "top1": 0.9, "top5": 1.0}))
    assert final(done) == 0.9  # events written since the summary: made again from them, and kept
    assert json.loads(path.read_text())["events"][0] == (done.folder / eventlog.FILENAME).stat().st_size
    path.write_text('{"events": [1')  # a summary a crash left half written
    assert final(done) == 0.9 and json.loads(path.read_text())["final"]["val_top1"] == 0.9


def test_a_kept_summary_holds_the_most_points_and_keeps_the_spikes_for_fewer(alice):
    long = model(alice, "long")
    for step in range(1, 1201):  # more train losses than a kept curve holds, one of them a spike
        eventlog.append(long.folder, kinds.TRAIN, kinds.train(step, step / 400, 50.0 if step == 777 else 1.0 / step,
                                                               0.01, 64, 100.0, 0.1))
    client = signed_in(alice)
    most = get(client, f"ids={long.pk}").json()["runs"][0]["curves"]["train_loss"]
    assert compare.MAX_POINTS - 2 <= len(most) <= compare.MAX_POINTS and [1.9425, 50.0] in most
    runsummary.SUMMARIES.entries.clear()  # now read from the kept summary
    assert get(client, f"ids={long.pk}").json()["runs"][0]["curves"]["train_loss"] == most
    assert (long.folder / runsummary.SUMMARY_FILE).stat().st_size < 2 * 8 * runsummary.KEPT_POINTS * 4 / 3 + 1000
    fewer = get(client, f"ids={long.pk}&points=20").json()["runs"][0]["curves"]["train_loss"]
    assert len(fewer) <= 20 and [1.9425, 50.0] in fewer and fewer[0] == [0.0025, 1.0]


def test_the_summaries_held_in_memory_are_the_latest_used_up_to_their_number(alice):
    summaries = runsummary._Summaries(2)
    jobs = [model(alice, f"m{i}") for i in range(3)]
    for job in jobs:
        record(job, [0.5])
    first = summaries.get(jobs[0])
    summaries.get(jobs[1])
    assert summaries.get(jobs[0]) is first and len(summaries.entries) == 2  # both held
    summaries.get(jobs[2])  # a third: the least recently used goes
    assert list(summaries.entries) == [str(jobs[0].folder), str(jobs[2].folder)]
    assert summaries.get(jobs[1]).final == {"val_top1": 0.5, "val_top5": 1.0, "val_loss": 0.5, "train_loss": 0.1}


def test_a_model_without_events_yet_is_listed_without_curves(alice):
    queued = model(alice, "queued", status=Status.QUEUED)
    run = get(signed_in(alice), f"ids={queued.pk}").json()["runs"][0]
    assert run["curves"] == {} and run["final"] == {} and run["status"] == "queued"


def test_signed_out_visitors_get_nothing(alice):
    job = model(alice, "m")
    assert Client().get(f"/api/compare?ids={job.pk}").status_code == 401
    page = Client().get(f"/compare/?ids={job.pk}")
    assert page.status_code == 302 and "/login/" in page["Location"]


def test_the_page_embeds_the_comparison_and_says_why_it_cannot_show_one(alice):
    job = model(alice, "m")
    client = signed_in(alice)
    page = client.get(f"/compare/?ids={job.pk}").content.decode()
    assert "training/compare.js" in page and 'id="compare-data"' in page and "Link to this comparison" in page
    refused = client.get("/compare/?ids=twelve")
    assert refused.status_code == 400 and "give job numbers separated by commas" in refused.content.decode()
    assert "training/compare.js" not in refused.content.decode()


def test_the_page_embeds_the_first_metrics_curves_and_the_api_gives_those_asked_for(alice):
    job = model(alice, "m")
    record(job, [0.5, 0.6])
    client = signed_in(alice)
    page = client.get(f"/compare/?ids={job.pk}").content.decode()
    embedded = json.loads(re.search(r'id="compare-data" type="application/json">(.*?)</script>', page, re.S).group(1))
    assert embedded["curves"] == ["val_top1"] and list(embedded["runs"][0]["curves"]) == ["val_top1"]
    assert embedded["api"] == f"/api/compare?ids={job.pk}"
    asked = get(client, f"ids={job.pk}&curves=val_loss,train_loss").json()
    assert asked["curves"] == ["val_loss", "train_loss"] and set(asked["runs"][0]["curves"]) == {"val_loss", "train_loss"}
    every = get(client, f"ids={job.pk}").json()
    assert every["curves"] is None and set(every["runs"][0]["curves"]) == {"val_top1", "val_top5", "val_loss", "train_loss"}
