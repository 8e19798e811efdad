"""A model archive for any snapshot: everything needed to use the model
without this project, as ``model.zip``.

What it holds depends on the model's task, and the task says it: its
registration names the module that makes the files (``Task.export``), with
its ``FILES`` (the archive's names, in order) and
``archive_files(loaded)`` (their bytes by name). Every archive has the
weights (``weights.safetensors``: no code in the file), the network as
``model.onnx``, ``labels.txt``, ``mean.npy`` and ``mean.png`` (what
preprocessing subtracts, in pixel units), ``info.json`` (the preprocessing)
and a ``README.md`` whose code runs the model with onnxruntime as the app
does. Classification's is ``trainer.tasks.classification_export``,
detection's ``trainer.tasks.detection_export``.

The archive is written next to its destination and renamed into place, so
a half-written one is never seen.
"""

from __future__ import annotations

import importlib
import io
import os
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import torch
from PIL import Image
from safetensors.torch import save as safetensors_bytes

from trainer.inference.errors import InferenceError
from trainer.inference.model import Loaded, mean_pixels
from trainer.tasks import Task

ARCHIVE_VERSION = 1


def exporter(task: Task) -> ModuleType:
    """The module that makes the archive of ``task``'s models; InferenceError
    for a task whose models cannot be exported."""
    if task.export is None:
        raise InferenceError(f"{task.label} models cannot be exported yet.")
    return importlib.import_module(task.export)


def first_line(exc: Exception) -> str:
    """The first line of an exporter's error, for the job's message."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def weights_bytes(model: torch.nn.Module) -> bytes:
    """The model's state dict as safetensors."""
    return safetensors_bytes({k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()})


def labels_bytes(loaded: Loaded) -> bytes:
    """``labels.txt``: the class names, one a line."""
    return "".join(f"{name}\n" for name in loaded.classes).encode()


def mean_files(loaded: Loaded) -> dict[str, bytes]:
    """``mean.npy`` (float32 H×W×C, pixel units) and ``mean.png`` (the same, rounded to 8 bits)."""
    mean = mean_pixels(loaded)
    pixels = np.clip(np.rint(mean), 0, 255).astype(np.uint8)
    npy, png = io.BytesIO(), io.BytesIO()
    np.save(npy, mean)
    Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels).save(png, format="PNG")
    return {"mean.npy": npy.getvalue(), "mean.png": png.getvalue()}


def export_archive(loaded: Loaded, destination: Path | str) -> Path:
    """Write the model archive of ``loaded`` to ``destination`` (a .zip); returns it."""
    destination = Path(destination)
    made = exporter(loaded.task)
    files = made.archive_files(loaded)
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in made.FILES:
            archive.writestr(name, files[name])
    os.replace(partial, destination)
    return destination
