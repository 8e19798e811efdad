"""The training section of the job page and what it serves: the metrics
API, run files (and nothing else), profiling requests, resuming, the group
page and the home page's sparklines. Events are written by hand, as the
trainer would; no worker runs."""

import json
import re

import pytest
from django.test import Client
from django.utils.text import slugify

from jobs import queue, services
from jobs.bus import client as redis_client
from jobs.models import Job, Status
from tests.clients import signed_in
from trainer import eventkinds as kinds
from trainer import eventlog, jobfiles
from web.api import ActionError

PARAMS = {"dataset": 1, "network": {"source": "standard", "name": "lenet"}, "epochs": 5, "lr": 0.01,
          "batch_size": 64, "solver": "sgd"}


def train_job(owner, status=Status.RUNNING, name="lenet", group="", **params) -> Job:
    job = Job.objects.create(kind="train", name=name, group=group, owner=owner, params={**PARAMS, **params},
                             resources={"device": "cpu", "count": 1}, status=status)
    job.folder.mkdir(parents=True)
    return job



def record_training(job: Job, steps: int = 200, val_every: int = 50) -> None:
    folder = job.folder
    layer = {"name": "conv1", "type": "Conv2d", "output_shape": [20, 24, 24], "params": 520}
    eventlog.append(folder, kinds.NETWORK, {"summary": {"layers": [layer], "params": 520, "trainable": 520,
                                                        "flops_per_image": 1000}, "input": [1, 28, 28], "classes": ["0", "1"]})
    for step in range(1, steps + 1):
        epoch = step / 100
        eventlog.append(folder, kinds.TRAIN, kinds.train(step, epoch, 2.0 / step, 0.01, 64, 1000.0, 0.1))
        if step % val_every == 0:
            metrics = {"loss": 1.0 / step, "top1": step / (steps + 1), "top5": 0.99}
            eventlog.append(folder, kinds.VAL, kinds.val(step, epoch, metrics))
            snapshot = f"checkpoints/epoch-{step // 100}-{step}.pt"
            (folder / "checkpoints").mkdir(exist_ok=True)
            (folder / snapshot).write_bytes(b"weights")
            eventlog.append(folder, kinds.SNAPSHOT, kinds.snapshot(step, epoch, snapshot, True, {
                "val_loss": 1.0 / step, "val_top1": 0.5, "val_top5": 0.9, "train_loss": 2.0 / step}))
            eventlog.append(folder, kinds.BEST, {"epoch": epoch, "step": step, "metric": "val_top1", "value": 0.5,
                                             "file": snapshot})
    eventlog.append(folder, kinds.PROGRESS, {"progress": 0.5, "epoch": 2.0, "loss": 0.01})
    eventlog.append(folder, kinds.HARDWARE, {"gpus": [{"index": 0, "name": "H100", "utilization": 97, "memory_used": 2**30,
                                                   "memory_total": 80 * 2**30, "temperature": 60, "power_watts": 300.0}],
                                         "cpu_percent": 105.0, "rss_bytes": 2**31, "threads": 8})
    eventlog.append(folder, kinds.PERF, {"images_per_s": 1000.0, "data_wait": 0.1, "step_ms": 12.5, "flops_per_image": 1000,
                                     "mfu": None, "device": "cpu"})
    (folder / "visuals").mkdir(exist_ok=True)
    (folder / "visuals" / "filters-200.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    eventlog.append(folder, kinds.LAYERS, {"step": steps, "epoch": steps / 100, "filters": "visuals/filters-200.png", "layers": [
        {"name": "conv1", "weight_norm": 1.5, "grad_norm": 0.01, "weight_hist": {"edges": [0, 1, 2], "counts": [3, 4]},
         "grad_hist": {"edges": [0, 1, 2], "counts": [1, 2]}}]})


# ---- the metrics API --------------------------------------------------------------

def test_the_metrics_api_returns_downsampled_series_snapshots_and_best(alice):
    job = train_job(alice)
    record_training(job)
    client = signed_in(alice)
    body = client.get(f"/api/jobs/{job.pk}/metrics").json()
    assert set(body["series"]) == {"train_loss", "val_loss", "val_top1", "val_top5", "lr", "images_per_s", "data_wait"}
    assert len(body["series"]["train_loss"]) == 200 and body["series"]["train_loss"][0] == [1, 0.01, 2.0]
    assert [p[0] for p in body["series"]["val_loss"]] == [50, 100, 150, 200]
    assert [s["step"] for s in body["snapshots"]] == [50, 100, 150, 200]
    assert body["best"]["step"] == 200 and body["result"] is None

    small = client.get(f"/api/jobs/{job.pk}/metrics?points=20").json()
    assert all(len(points) <= 20 for points in small["series"].values())
    assert small["series"]["train_loss"][0] == [1, 0.01, 2.0]  # the highest loss survives
    assert client.get(f"/api/jobs/{job.pk}/metrics?points=lots").status_code == 400


def test_the_metrics_api_is_for_signed_in_users_and_training_jobs(alice, bob):
    job = train_job(alice)
    assert Client().get(f"/api/jobs/{job.pk}/metrics").status_code == 401
    assert signed_in(bob).get(f"/api/jobs/{job.pk}/metrics").status_code == 200  # anyone signed in may look
    check = Job.objects.create(kind="devicecheck", name="c", owner=alice, params={}, resources={})
    assert signed_in(alice).get(f"/api/jobs/{check.pk}/metrics").status_code == 404


# ---- files ----------------------------------------------------------------------------

def test_the_files_view_serves_run_files_only(alice, bob):
    job = train_job(alice)
    record_training(job, steps=50)
    (job.folder / "config.json").write_text("{}")
    (job.folder / "profile").mkdir()
    (job.folder / "profile" / "trace-5.json").write_text("{}")
    (job.folder / "checkpoints" / "escape.pt").symlink_to(job.folder / "config.json")
    other = train_job(bob, name="other")
    (other.folder / "checkpoints").mkdir()
    (other.folder / "checkpoints" / "last.pt").write_bytes(b"theirs")
    client = signed_in(bob)

    snapshot = client.get(f"/jobs/{job.pk}/files/checkpoints/epoch-0-50.pt")
    assert snapshot.status_code == 200 and b"".join(snapshot.streaming_content) == b"weights"
    assert snapshot["Content-Disposition"] == f'attachment; filename="{slugify(job.name)}-epoch-0-50.pt"'
    assert snapshot["Content-Type"] == "application/octet-stream"
    image = client.get(f"/jobs/{job.pk}/files/visuals/filters-200.png")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert "attachment" not in image.get("Content-Disposition", "")
    assert client.get(f"/jobs/{job.pk}/files/profile/trace-5.json").status_code == 200

    for refused in ["config.json", "events.jsonl", "log.txt", "checkpoints/../config.json", "checkpoints/%2e%2e/config.json",
                    "visuals/../../../../etc/passwd", "checkpoints/escape.pt", "checkpoints", "checkpoints/missing.pt",
                    f"checkpoints/../../{other.pk}/checkpoints/last.pt"]:
        assert client.get(f"/jobs/{job.pk}/files/{refused}").status_code == 404, refused
    assert Client().get(f"/jobs/{job.pk}/files/checkpoints/epoch-0-50.pt").status_code == 302  # to sign in


# ---- profiling --------------------------------------------------------------------------

def test_a_profile_request_creates_the_file_for_a_running_job_of_the_owner_or_staff(alice, bob, staff):
    job = train_job(alice)
    request = job.folder / jobfiles.PROFILE_REQUEST
    refused = signed_in(bob).post(f"/api/jobs/{job.pk}/profile")
    assert refused.status_code == 403 and not request.exists()
    accepted = signed_in(alice).post(f"/api/jobs/{job.pk}/profile")
    assert accepted.status_code == 202 and request.exists()
    request.unlink()
    assert signed_in(staff).post(f"/api/jobs/{job.pk}/profile").status_code == 202 and request.exists()


def test_a_profile_request_for_a_job_that_is_not_running_is_409(alice):
    client = signed_in(alice)
    for status in (Status.QUEUED, Status.DONE, Status.ABORTED):
        job = train_job(alice, status=status, name=status)
        response = client.post(f"/api/jobs/{job.pk}/profile")
        assert response.status_code == 409 and "only a running training job" in response.json()["error"]
        assert not (job.folder / jobfiles.PROFILE_REQUEST).exists()
    assert client.post("/api/jobs/9999/profile").status_code == 404


def test_the_page_profile_button_posts_to_the_job(alice, bob):
    job = train_job(alice)
    assert signed_in(bob).post(f"/jobs/{job.pk}/profile").status_code == 403
    response = signed_in(alice).post(f"/jobs/{job.pk}/profile")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert (job.folder / jobfiles.PROFILE_REQUEST).exists()


# ---- resuming -------------------------------------------------------------------------------

def with_checkpoint(job: Job) -> Job:
    (job.folder / "checkpoints").mkdir(exist_ok=True)
    (job.folder / "checkpoints" / "last.pt").write_bytes(b"state")
    return job


def drop_from_broker(job: Job) -> None:
    """Take the job's message off the suite's queue, so no later test's worker gets it."""
    redis = redis_client()
    name = queue.settings.CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] + queue.queue_for(job)
    for message in redis.lrange(name, 0, -1):
        if queue._job_id(message.decode()) == job.pk:
            redis.lrem(name, 0, message)


def test_resume_queues_an_aborted_job_with_a_checkpoint_again(alice, django_capture_on_commit_callbacks):
    job = with_checkpoint(train_job(alice, status=Status.ABORTED, attempt=2, abort_requested=True, error="stopped"))
    assert services.resumable(job)
    with django_capture_on_commit_callbacks(execute=True):
        services.resume(job, alice)
    try:
        job.refresh_from_db()
        assert (job.status, job.finished_at, job.abort_requested, job.error, job.attempt) == (Status.QUEUED, None, False, "", 0)
        assert job.pk in queue.job_ids_in_broker()
    finally:
        drop_from_broker(job)
    published = [e["data"] for e in eventlog.read_all(job.folder) if e["kind"] == "status"]
    assert published[-1]["status"] == "queued" and "Resumed by alice" in published[-1]["message"]
    assert job.transitions.last().status == Status.QUEUED


def test_resume_refuses_jobs_it_cannot_carry_on_and_other_users(alice, bob, staff):
    failed = with_checkpoint(train_job(alice, status=Status.FAILED, name="failed"))
    with pytest.raises(ActionError) as refused:
        services.resume(failed, bob)
    assert refused.value.status == 403
    cases = {
        "without a checkpoint": (train_job(alice, status=Status.FAILED, name="no checkpoint"), "no checkpoint"),
        "done": (with_checkpoint(train_job(alice, status=Status.DONE, name="done")), "only an aborted or failed"),
        "running": (with_checkpoint(train_job(alice, status=Status.RUNNING, name="running")), "only an aborted or failed"),
    }
    for what, (job, message) in cases.items():
        assert not services.resumable(job), what
        with pytest.raises(ActionError) as refused:
            services.resume(job, staff)
        assert refused.value.status == 409 and message in refused.value.message, what
        assert Job.objects.get(pk=job.pk).status == job.status
    check = Job.objects.create(kind="devicecheck", name="c", owner=alice, params={}, resources={}, status=Status.FAILED)
    with pytest.raises(ActionError, match="A device check job cannot be resumed"):
        services.resume(check, alice)


def test_resume_over_the_api_and_the_page(alice, bob):
    api_job = with_checkpoint(train_job(alice, status=Status.FAILED, name="api"))
    assert signed_in(bob).post(f"/api/jobs/{api_job.pk}/resume").status_code == 403
    response = signed_in(alice).post(f"/api/jobs/{api_job.pk}/resume")
    assert response.status_code == 202 and response.json()["status"] == "queued"
    assert response.json()["resumable"] is False
    assert signed_in(alice).post(f"/api/jobs/{api_job.pk}/resume").status_code == 409

    page_job = with_checkpoint(train_job(alice, status=Status.ABORTED, name="page"))
    detail = signed_in(alice).get(f"/api/jobs/{page_job.pk}").json()
    assert detail["resumable"] is True
    redirected = signed_in(alice).post(f"/jobs/{page_job.pk}/resume")
    assert redirected.status_code == 302 and Job.objects.get(pk=page_job.pk).status == Status.QUEUED


# ---- the job page -------------------------------------------------------------------------------

def embedded(response, element_id: str) -> dict:
    html = response.content.decode()
    opening = f'<script id="{element_id}" type="application/json">'
    start = html.index(opening) + len(opening)
    return json.loads(html[start:html.index("</script>", start)])


def test_the_job_page_shows_the_training_section_with_its_data(alice, bob):
    job = train_job(alice, status=Status.ABORTED)
    record_training(job)
    with_checkpoint(job)
    page = signed_in(alice).get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    for element in ('id="metrics-chart"', 'id="snapshots-table"', 'id="hardware-chart"', 'id="norms-chart"',
                    'id="network-table"', 'id="profile-form"', "training/section.js", "/vendor/plotly.min.js"):
        assert element in html, element
    assert f'href="/jobs/{job.pk}/files/checkpoints/epoch-2-200.pt"' in html  # Download model: the best snapshot
    assert 'id="resume-form"' in html and 'id="resume-form" hidden' not in html  # aborted, with a checkpoint
    data = embedded(page, "training-data")
    assert data["through"] == eventlog.read_all(job.folder)[-1]["seq"]
    assert len(data["series"]["train_loss"]) == 200 and data["series"]["val_top1"][-1][0] == 200
    assert [s["exists"] for s in data["snapshots"]] == [True] * 4 and data["snapshots"][-1]["is_best"]
    assert data["layers"]["filters"] == "visuals/filters-200.png" and data["hardware"][0]["gpus"][0]["utilization"] == 97
    assert data["network"]["summary"]["params"] == 520 and data["perf"]["mfu"] is None
    assert data["files_url"] == f"/jobs/{job.pk}/files/"

    theirs = signed_in(bob).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="metrics-chart"' in theirs and 'id="resume-form"' not in theirs and 'id="profile-form"' not in theirs


def test_the_job_page_of_a_queued_training_job_renders_without_events(alice):
    job = train_job(alice, status=Status.QUEUED, group="sweep 1")
    page = signed_in(alice).get(f"/jobs/{job.pk}/")
    assert page.status_code == 200
    assert 'href="/groups/alice/sweep%201/"' in page.content.decode()
    data = embedded(page, "training-data")
    assert data["through"] == 0 and data["series"]["train_loss"] == [] and data["snapshots"] == []


# ---- the group page ----------------------------------------------------------------------------------

def test_the_group_page_and_api_overlay_the_groups_runs(alice):
    first = train_job(alice, group="lr sweep", name="lr 0.01")
    second = train_job(alice, status=Status.DONE, group="lr sweep", name="lr 0.1", lr=0.1, batch_size=128)
    record_training(first, steps=100)
    record_training(second, steps=200)
    Job.objects.create(kind="devicecheck", name="check", group="lr sweep", owner=alice, params={}, resources={})
    train_job(alice, group="elsewhere", name="not in it")
    client = signed_in(alice)

    body = client.get("/api/groups/alice/lr sweep").json()
    assert (body["group"], body["owner"], body["active"]) == ("lr sweep", "alice", True)
    assert body["headline"] == {"field": "top1", "label": "top-1", "series": "val_top1"}
    names = [job["name"] for job in body["jobs"]]
    assert names == ["lr 0.01", "lr 0.1", "check"]
    fast = body["jobs"][1]
    assert (fast["lr"], fast["batch_size"], fast["solver"], fast["network"]) == (0.1, 128, "sgd", "lenet")
    assert fast["best_top1"] == {"value": 200 / 201, "epoch": 2.0}
    assert fast["best_val_loss"] == {"value": 1.0 / 200, "epoch": 2.0}
    assert [p[0] for p in fast["curves"]["val_loss"]] == [50, 100, 150, 200]
    assert "curves" not in body["jobs"][2]

    page = client.get("/groups/alice/lr sweep/")
    assert page.status_code == 200 and "training/group.js" in page.content.decode()
    assert embedded(page, "group-data")["jobs"][0]["name"] == "lr 0.01"
    assert client.get("/groups/alice/nobody/").status_code == 404
    assert client.get("/api/groups/alice/nobody").status_code == 404
    assert client.get("/api/groups/nobody/lr sweep").status_code == 404
    assert Client().get("/api/groups/alice/lr sweep").status_code == 401


def test_groups_are_each_owners_own(alice, bob):
    train_job(alice, group="sweep", name="alice's run")
    train_job(bob, group="sweep", name="bob's run")
    outsider = signed_in(bob)

    mine = outsider.get("/api/groups/bob/sweep").json()
    assert [job["name"] for job in mine["jobs"]] == ["bob's run"]
    theirs = outsider.get("/api/groups/alice/sweep").json()
    assert [job["name"] for job in theirs["jobs"]] == ["alice's run"], "anyone may look, at the owner's group only"
    page = outsider.get("/groups/alice/sweep/")
    assert [job["name"] for job in embedded(page, "group-data")["jobs"]] == ["alice's run"]
    assert "of alice" in page.content.decode()
    urls = {job["name"]: job["group_url"] for job in outsider.get("/api/jobs").json()["jobs"]}
    assert urls == {"alice's run": "/groups/alice/sweep/", "bob's run": "/groups/bob/sweep/"}


def test_a_group_name_with_a_slash_has_its_page(alice):
    train_job(alice, group="cifar/resnet", status=Status.DONE)
    client = signed_in(alice)
    assert client.get("/groups/alice/cifar%2Fresnet/").status_code == 200
    assert client.get("/api/groups/alice/cifar/resnet").json()["active"] is False


# ---- the home page ----------------------------------------------------------------------------------------

def test_home_summaries_carry_a_sparkline_of_the_train_loss(alice):
    job = train_job(alice, group="g")
    record_training(job, steps=300)
    Job.objects.create(kind="devicecheck", name="check", owner=alice, params={}, resources={})
    client = signed_in(alice)
    jobs = {j["name"]: j for j in client.get("/api/jobs").json()["jobs"]}
    line = jobs["lenet"]["sparkline"]
    assert 2 <= len(line) <= 60 and line[0] == 2.0 and line[-1] <= line[0]
    assert jobs["lenet"]["group_url"] == "/groups/alice/g/"
    assert "sparkline" not in jobs["check"] and jobs["check"]["group_url"] is None
    home = client.get("/?tab=models")
    assert home.status_code == 200 and embedded(home, "tabs-data")[1]["jobs"][0]["sparkline"] == line


def test_the_api_schema_describes_these_endpoints(alice):
    paths = signed_in(alice).get("/api/openapi.json").json()["paths"]
    for path in ("/api/jobs/{job_id}/metrics", "/api/jobs/{job_id}/profile", "/api/jobs/{job_id}/resume",
                 "/api/groups/{owner}/{group}"):
        assert path in paths, path


def test_top5_is_left_out_for_a_dataset_of_five_classes_or_fewer(alice):
    dataset = Job.objects.create(kind="dataset", name="bars", owner=alice, params={}, resources={}, status=Status.DONE)
    (dataset.folder / jobfiles.DATASET).mkdir(parents=True)
    (dataset.folder / jobfiles.DATASET / jobfiles.MANIFEST).write_text(json.dumps({"classes": ["a", "b", "c", "d"]}))
    few = signed_in(alice).get(f"/jobs/{train_job(alice, dataset=dataset.pk).pk}/")
    assert embedded(few, "training-data")["classes"] == 4 and "<th>Top-5</th>" not in few.content.decode()
    unknown = signed_in(alice).get(f"/jobs/{train_job(alice, dataset=dataset.pk + 1000, name='x').pk}/")
    assert embedded(unknown, "training-data")["classes"] is None and "<th>Top-5</th>" in unknown.content.decode()


def test_the_settings_read_as_a_table_grouped_like_the_form_with_no_server_path(alice):
    server_path = "/srv/digitslike/jobs/1/dataset"
    job = train_job(alice, dataset_dir=server_path, solver="momentum",
                    lr_policy={"name": "step", "step_percent": 33.0, "gamma": 0.1, "warmup_percent": 0.0})
    page = signed_in(alice).get(f"/jobs/{job.pk}/").content.decode()
    assert server_path not in page
    groups = re.findall(r'<tr><th colspan="2">([^<]+)</th></tr>', page)
    assert groups == ["Data", "Network", "Solver", "Learning rate", "Augmentation", "Precision &amp; devices", "Stopping"]
    for row in ("<td>Solver</td><td>SGD with momentum</td>", "<td>Policy</td><td>Step down</td>",
                "<td>Step size (% of training)</td><td>33.0</td>", "<td>Network</td><td>LeNet"):
        assert row in page, row
    assert "dataset_dir" not in embedded(signed_in(alice).get(f"/jobs/{job.pk}/"), "settings-json")
    assert "dataset_dir" not in signed_in(alice).get(f"/api/jobs/{job.pk}").json()["params"]
