"""A real small dataset made offline: the 1,797 handwritten digits (8×8,
16 grey levels) of ``sampledata/digits.csv.gz`` (its README says where they
come from), written as PNG class folders and imported like any server folder."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from PIL import Image

from jobs.models import Job

from .forms import DatasetForm

DIGITS = Path(__file__).parent / "sampledata" / "digits.csv.gz"


def sample_folder() -> Path:
    return settings.DATA_DIR / "samples" / "digits"


def write_digits(folder: Path) -> int:
    """Write the digits as ``folder/<digit>/<n>.png``; returns the image count."""
    with gzip.open(DIGITS, "rt") as lines:
        rows = np.loadtxt(lines, delimiter=",", dtype=np.int64)
    done = folder.with_suffix(".done")
    if done.exists():
        return len(rows)
    for n, row in enumerate(rows):
        path = folder / str(row[-1]) / f"{n:04d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.rint(row[:-1].reshape(8, 8) * 255 / 16).astype(np.uint8)).save(path)
    done.touch()
    return len(rows)


def submit(owner: User) -> Job:
    folder = sample_folder()
    write_digits(folder)
    form = DatasetForm({**{k: f.initial for k, f in DatasetForm.base_fields.items() if f.initial is not None},
                        "name": "Handwritten digits (sample)", "group": "samples", "source": "folder",
                        "train_folder": str(folder), "image_type": "grayscale", "width": 28, "height": 28,
                        "encoding": "none", "shuffle": True, "mean": True})
    if not form.is_valid():
        raise RuntimeError(f"the sample dataset form is invalid: {form.errors.as_json()}")
    return form.submit(owner)
