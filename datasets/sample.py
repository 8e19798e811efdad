"""A real small dataset made offline: the 1,797 handwritten digits (8×8,
16 grey levels) bundled with scikit-learn, written as PNG class folders and
imported like any server folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from PIL import Image

from jobs.models import Job

from .forms import DatasetForm


def sample_folder() -> Path:
    return settings.DATA_DIR / "samples" / "digits"


def write_digits(folder: Path) -> int:
    """Write the digits as ``folder/<digit>/<n>.png``; returns the image count."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    done = folder.with_suffix(".done")
    if done.exists():
        return len(digits.images)
    for n, (pixels, target) in enumerate(zip(digits.images, digits.target, strict=True)):
        path = folder / str(target) / f"{n:04d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.rint(pixels * 255 / 16).astype(np.uint8)).save(path)
    done.touch()
    return len(digits.images)


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
