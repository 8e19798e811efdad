"""Trained models and image files for the evaluation tests: a LeNet trained
on the generated bars in this process by the trainer's own ``Run``, into a
training job's folder as a worker would leave it, and bar images written as
PNG files whose true classes the test knows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from django.conf import settings
from PIL import Image

from inference.forms import EvaluationForm
from jobs.models import Job, Status
from tests.trainfiles import CLASSES, bars, make_dataset, train_config
from trainer.distributed import Placement
from trainer.train import Run

CPU = Placement(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))


def dataset_job(owner, **sizes) -> Job:
    job = Job.objects.create(kind="dataset", name="bars", owner=owner, status=Status.DONE)
    make_dataset(job.folder / "dataset", per_class=sizes or None)
    return job


def trained_model(owner, dataset: Job | None = None, name: str = "lenet", group: str = "", epochs: int = 2) -> Job:
    """A done training job whose folder holds a trained LeNet."""
    dataset = dataset or dataset_job(owner)
    params = train_config(dataset.folder / "dataset", dataset=dataset.pk, epochs=epochs)
    model = Job.objects.create(kind="train", name=name, owner=owner, status=Status.DONE, params=params, group=group,
                               resources={"device": "cpu", "count": 1})
    config = {**params, "job_id": model.pk, "devices": ["cpu0"]}
    model.folder.mkdir(parents=True)
    (model.folder / "config.json").write_text(json.dumps(config))
    Run(config, model.folder, CPU).train()
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
