"""Trained models and image files for the evaluation tests: a LeNet trained
on the generated bars in this process by the trainer's own ``Run``, into a
training job's folder as a worker would leave it, and bar images written as
PNG files whose true classes the test knows."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import numpy as np
import torch
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from datasets import services as dataset_services
from datasets.forms import DatasetForm
from inference.evaluate import services
from inference.evaluate.forms import EvaluationForm
from jobs.models import Job, Status
from tests.sharedruns import made_once
from tests.trainfiles import CLASSES, bars, make_dataset, train_config
from trainer import eventkinds, eventlog, jobfiles
from trainer.distributed import Placement
from trainer.evaluation_files import OUTPUT, REPORT, RESULTS
from trainer.inference.job import page_report
from trainer.train import Run

CPU = Placement(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


def dataset_job(owner, **sizes) -> Job:
    job = Job.objects.create(kind="dataset", name="bars", owner=owner, status=Status.DONE)
    make_dataset(dataset_services.folder(job), per_class=sizes or None)
    return job


def trained_model(owner, dataset: Job | None = None, name: str = "lenet", group: str = "", epochs: int = 2,
                  **overrides) -> Job:
    """A done training job whose folder holds a trained LeNet (or the
    network ``overrides`` name)."""
    dataset = dataset or dataset_job(owner)
    params = train_config(dataset_services.folder(dataset), dataset=dataset.pk, epochs=epochs, **overrides)
    model = Job.objects.create(kind="train", name=name, owner=owner, status=Status.DONE, params=params, group=group,
                               resources={"device": "cpu", "count": 1})
    config = {**params, "job_id": model.pk, "devices": ["cpu0"]}
    model.folder.mkdir(parents=True)
    (model.folder / jobfiles.CONFIG).write_text(json.dumps(config))
    Run(config, model.folder, CPU).train()
    return model


def train_once(root: Path, epochs: int = 2) -> Path:
    """A bars dataset (``root/dataset``) and a LeNet trained on it
    (``root/run``), with no job rows: for a module's tests to share, each
    copying it into its own jobs with ``copied_model`` (made once in the
    suite's run, see ``tests/sharedruns.py``)."""
    return made_once(f"lenet-{epochs}", partial(_train_lenet, epochs=epochs), root)


def _train_lenet(root: Path, epochs: int) -> None:
    dataset_dir = make_dataset(root / "dataset")
    run = root / "run"
    run.mkdir()
    config = {**train_config(dataset_dir, epochs=epochs), "job_id": 0, "devices": ["cpu0"]}
    (run / jobfiles.CONFIG).write_text(json.dumps(config))
    Run(config, run, CPU).train()


def uploaded_dataset_job(owner) -> Job:
    """A done dataset job with the params of one made from an uploaded archive
    (its folder still to fill)."""
    form = DatasetForm({"name": "bars", "source": "archive", "width": 28, "height": 28, "image_type": "grayscale",
                        "resize_mode": "squash", "val_percent": 20, "test_percent": 20, "min_per_class": 2,
                        "encoding": "none", "quality": 90, "seed": 1, "mean": True},
                       {"archive": SimpleUploadedFile("bars.tar.gz", b"\x1f\x8b")})
    assert form.is_valid(), form.errors
    job = Job.objects.create(kind="dataset", name="bars", owner=owner, status=Status.DONE, params=form.params(),
                             progress=1.0)
    job.params["source"]["path"] = str(job.folder / "upload" / "archive.tar.gz")
    job.save(update_fields=["params"])
    return job


def copied_model(owner, trained: Path, name: str = "lenet", group: str = "") -> Job:
    """A done training job and its dataset's, holding copies of what ``train_once`` made."""
    dataset = uploaded_dataset_job(owner)
    shutil.copytree(trained / "dataset", dataset_services.folder(dataset))
    manifest = json.loads((dataset_services.folder(dataset) / jobfiles.MANIFEST).read_text())
    manifest["options"] = {k: v for k, v in dataset.params.items() if k != "roots"}  # as the build records them
    (dataset_services.folder(dataset) / jobfiles.MANIFEST).write_text(json.dumps(manifest))
    return copied_run(owner, dataset, trained / "run", name, group)


def copied_run(owner, dataset: Job, run: Path, name: str, group: str = "") -> Job:
    """A done training job of ``dataset`` (its folder already filled) holding
    a copy of the finished run folder ``run``, its config pointed at them."""
    config = json.loads((run / jobfiles.CONFIG).read_text())
    params = {**config, "dataset": dataset.pk, "dataset_dir": str(dataset_services.folder(dataset))}
    del params["job_id"], params["devices"]
    model = Job.objects.create(kind="train", name=name, owner=owner, status=Status.DONE, params=params, group=group,
                               resources={"device": "cpu", "count": 1}, progress=1.0)
    shutil.copytree(run, model.folder)
    (model.folder / jobfiles.CONFIG).write_text(json.dumps({**params, "job_id": model.pk, "devices": ["cpu0"]}))
    return model


def evaluated_over_api(client, model: Job, split: str = "val", timeout: float = 180) -> tuple[Job, dict]:
    """``model`` evaluated on ``split`` through ``POST /api/models/<id>/evaluate``
    by the running worker: the done evaluation and its report as the API
    gives it, checked to be the job's own file."""
    from tests.jobtools import wait_status

    response = client.post(f"/api/models/{model.pk}/evaluate", data=json.dumps({"split": split}),
                           content_type="application/json")
    assert response.status_code == 201, response.content
    job = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=timeout)
    assert job.status == Status.DONE, job.error
    report = client.get(f"/api/evaluations/{job.pk}/report").json()["report"]
    assert report == json.loads((job.folder / OUTPUT / REPORT).read_text()), "the API gives the job's report"
    return job, report


def model_with_snapshot(owner, status=Status.DONE, **sizes) -> Job:
    """A training job as far as the web sees it: its config, one snapshot file and its event."""
    dataset = dataset_job(owner, **sizes)
    model = Job.objects.create(kind="train", name="lenet", owner=owner, status=status, group="sweep",
                               params=train_config(dataset_services.folder(dataset), dataset=dataset.pk),
                               resources={"device": "cpu", "count": 1})
    (model.folder / "checkpoints").mkdir(parents=True)
    (model.folder / jobfiles.CONFIG).write_text(json.dumps(model.params))
    (model.folder / "checkpoints" / "epoch-1.pt").write_bytes(b"weights")
    eventlog.append(model.folder, eventkinds.SNAPSHOT, {"step": 10, "epoch": 1.0, "file": "checkpoints/epoch-1.pt", "best": True})
    return model


def imports() -> Path:
    """The first folder the server may read images from."""
    folder = Path(settings.DATASET_ROOTS[0])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_bars(folder: Path, labels: list[int], seed: int = 5) -> list[Path]:
    """One PNG per label, a bar of that class, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for number, label in enumerate(labels):
        path = folder / f"{number:03d}-{CLASSES[label]}.png"
        Image.fromarray(bars(label, 28, rng)[:, :, 0]).save(path)
        paths.append(path)
    return paths


def submit_list(owner, model: Job, text: str) -> Job:
    """Queue the evaluation of ``model`` on a text list, as the form does."""
    form = EvaluationForm({"model": model.pk, "source": "list", "list_text": text, "top_n": 5})
    assert form.is_valid(), form.errors
    return form.submit(owner)


def evaluated_split(owner, mistakes: int, correct: int = 20) -> Job:
    """A done evaluation of a model's val split (as the web sees it: no model is run) whose results hold
    ``mistakes`` wrong rows (their confidence falling with their row number) and ``correct`` right ones."""
    count = mistakes + correct
    model = model_with_snapshot(owner, train=1, val=-(-count // len(CLASSES)))
    job = services.evaluate(owner, model, "val", "")
    rows = [{"index": i, "name": f"val/{i}", "label": i % len(CLASSES), "error": None,
             "top": [[(i + int(i < mistakes)) % len(CLASSES), 0.99 - i / (2 * count)],
                     [(i + 1 + int(i < mistakes)) % len(CLASSES), 0.005]]} for i in range(count)]
    output = job.folder / OUTPUT
    output.mkdir(parents=True)
    (output / RESULTS).write_text(json.dumps({"rows": rows}))
    (output / REPORT).write_text(json.dumps({**page_report(rows, list(CLASSES), 5), "snapshot": "epoch-1.pt"}))
    assert job.transition(Status.DONE, [Status.QUEUED])
    return job
