"""A full disk under DATA_DIR (a small tmpfs mounted for the test): a
dataset build and a training checkpoint fail with a message that says so,
leave nothing half-built and the last good checkpoint as it was, and run to
the end when resumed once space is freed."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from jobs.models import Job, Status
from tests.clients import signed_in
from tests.datasetfiles import class_folders
from tests.jobtools import events_of, submit_sleep, wait_status
from tests.processes import wait_for
from tests.training.test_training_runs import dataset_job, submit_model
from trainer import checkpoint, eventlog, jobfiles
from trainer.tasks import task_of
from training import series

DISK_BYTES = 16 * 2**20
FULL_MESSAGE = "The disk holding the app's data is full: "
GATE = "go"

# LeNet that stops at its 20th training batch (in the second epoch, after
# the first snapshot) until the test puts the file GATE in the job folder.
GATED_LENET = f"""
import os
import time

class Gated(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.batches = 0

    def forward(self, x):
        if self.training:
            self.batches += 1
            while self.batches == 20 and not os.path.exists({GATE!r}):
                time.sleep(0.05)
        return self.inner(x)

def build(channels, classes, height, width):
    from trainer.networks import build as standard
    return Gated(standard({{"source": "standard", "name": "lenet"}}, channels, classes, height, width))
"""


@pytest.fixture
def small_disk(settings):
    """DATA_DIR on a 16 MiB tmpfs of its own."""
    folder = settings.DATA_DIR
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "--lazy", str(folder)], check=True)


def fill(folder, leave: int):
    """Take all the disk's free space but ``leave`` bytes; returns the filler file."""
    filler = folder / "filler"
    with open(filler, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, shutil.disk_usage(folder).free - leave)
    return filler


def resume_through_the_api(job: Job) -> None:
    response = signed_in(job.owner).post(f"/api/jobs/{job.pk}/resume")
    assert response.status_code == 202, response.content


def test_a_checkpoint_on_a_full_disk_fails_the_model_keeping_its_last_checkpoint_and_it_resumes(
        small_disk, alice, worker):
    model = submit_model(alice, dataset_job(alice), epochs=3, network={"source": "python", "text": GATED_LENET})
    wait_for(lambda: events_of(model, "snapshot"), timeout=90, what="the first snapshot")
    last = model.folder / jobfiles.LAST_CHECKPOINT
    saved_step = checkpoint.load(last)["progress"]["step"]
    # Room for the run's events, not for its next checkpoint.
    filler = fill(small_disk, leave=last.stat().st_size // 3)
    (model.folder / GATE).touch()

    model = wait_status(model, Status.FAILED, timeout=60)
    assert model.error.startswith(FULL_MESSAGE) and model.error.endswith(" MB free; free space and resume."), model.error
    assert "Traceback" not in model.error
    assert checkpoint.load(last)["progress"]["step"] == saved_step, "the last good checkpoint is intact"
    assert not list(model.folder.rglob("*.partial")), "no half-written checkpoint is left"

    filler.unlink()
    resume_through_the_api(model)
    model = wait_status(model, Status.DONE, timeout=120)
    resumed = events_of(model, "resume")
    assert len(resumed) == 1 and resumed[0]["data"]["step"] == saved_step
    curve = series.view(model.folder, lambda run: run.metrics(task_of({}), 10_000))["series"]["train_loss"]
    steps = [point[0] for point in curve]
    assert steps == sorted(set(steps)), "no step twice"
    assert [round(e["data"]["epoch"], 6) for e in events_of(model, "val")][-2:] == [2.0, 3.0]


def test_a_dataset_build_on_a_full_disk_fails_leaving_nothing_half_built_and_builds_when_resumed(
        small_disk, alice, worker, tmp_path, settings, monkeypatch):
    roots = tmp_path / "imports"
    settings.DATASET_ROOTS = [str(roots)]
    monkeypatch.setenv("DATASET_ROOTS", str(roots))
    class_folders(roots / "shapes", {"red": 20, "blue": 20})
    # 40 raw images of 256×256×3 need 7.5 MiB: a little more than is left.
    filler = fill(small_disk, leave=6 * 2**20)
    client = signed_in(alice)
    response = client.post("/api/datasets", content_type="application/json", data={
        "name": "shapes", "source": "folder", "train_folder": str(roots / "shapes"), "width": 256, "height": 256,
        "image_type": "color", "resize_mode": "squash", "encoding": "none", "val_percent": 25})
    assert response.status_code == 201, response.content
    job = Job.objects.get(pk=response.json()["id"])

    job = wait_status(job, Status.FAILED, timeout=60)
    assert job.error.startswith(FULL_MESSAGE) and job.error.endswith(" MB free; free space and resume."), job.error
    assert not (job.folder / "dataset").exists() and not (job.folder / "dataset.partial").exists()
    page = client.get(f"/jobs/{job.pk}/")
    assert b"Build again" in page.content

    filler.unlink()
    resume_through_the_api(job)
    job = wait_status(job, Status.DONE, timeout=60)
    manifest = client.get(f"/api/datasets/{job.pk}").json()["manifest"]
    assert manifest["splits"]["train"]["count"] + manifest["splits"]["val"]["count"] == 40


def test_an_event_that_finds_no_room_leaves_the_log_whole(small_disk):
    folder = small_disk / "job"
    folder.mkdir()
    eventlog.append(folder, "log", {"lines": ["before"]})
    filler = fill(small_disk, leave=0)
    with pytest.raises(OSError):
        eventlog.append(folder, "log", {"lines": ["x" * 8192]})
    filler.unlink()
    eventlog.append(folder, "log", {"lines": ["after"]})
    assert [(e["seq"], e["data"]["lines"]) for e in eventlog.read_all(folder)] == [(1, ["before"]), (2, ["after"])]


def test_a_job_started_on_a_full_disk_fails_saying_so(small_disk, alice, worker):
    fill(small_disk, leave=0)
    job = wait_status(submit_sleep(alice), Status.FAILED, timeout=30)
    assert job.error.startswith(FULL_MESSAGE), job.error
