"""A trained model ready for inference: the network rebuilt from its job's
``config.json`` and dataset manifest, the weights of one snapshot (read with
``weights_only=True``), in eval mode, with everything preprocessing needs to
give an image exactly the form training gave it (size, channels, resize
mode, the build's padding, mean, crop). The network is built by its task's
training side, as the run built it."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from trainer import checkpoint, eventkinds, eventlog, jobfiles
from trainer.buildplan import pad_to
from trainer.data import DatasetInfo, Normalizer
from trainer.networks import NetworkError
from trainer.tasks import Task, task_of
from trainer.tasks.training import training_for

from .errors import InferenceError, ModelNotFound
from .weights import load_exactly

DEFAULT_RESIZE_MODE = "squash"  # the dataset form's default, for manifests that do not name one


@dataclass
class Loaded:
    """One model in memory; ``note`` says something the user should know
    about the snapshot chosen (the model is still training, say)."""

    model: nn.Module
    task: Task
    network: dict[str, Any]
    classes: list[str]
    channels: int
    image_size: tuple[int, int]  # height, width of the dataset's images (before any crop)
    input_size: tuple[int, int]  # height, width of the network's input
    resize_mode: str
    pad_to: tuple[int, int] | None  # the width and height the build padded images to before the resize (detection)
    normalizer: Normalizer
    snapshot: str
    note: str | None
    device: torch.device
    dataset_dir: Path  # the built dataset it learnt from

    @property
    def mean_mode(self) -> str:
        return self.normalizer.mean_mode


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelNotFound(f"{what} is gone.") from None
    except (OSError, ValueError) as exc:
        raise InferenceError(f"{what} cannot be read: {exc}") from None


def _is_snapshot(path: Path) -> bool:
    return path.is_file() and path.suffix == ".pt"


def _finished(job_dir: Path) -> bool:
    return any(event["kind"] == eventkinds.RESULT for event in eventlog.read_all(job_dir))


def choose_snapshot(job_dir: Path, name: str | None) -> tuple[Path, str | None]:
    """The snapshot file to load and a note for the user. Without ``name``:
    the best one of a finished model; the newest one of a model still
    training (said in the note)."""
    folder = Path(job_dir) / jobfiles.CHECKPOINTS
    if name:
        if Path(name).name != name or not name.endswith(".pt"):
            raise InferenceError(f"{name!r} is not the name of a snapshot.")
        if not _is_snapshot(folder / name):
            raise ModelNotFound(f"The snapshot {name} does not exist (any more).")
        return folder / name, None
    snapshots = sorted((p for p in folder.glob("*.pt") if _is_snapshot(p)), key=lambda p: p.stat().st_mtime)
    if not snapshots:
        raise ModelNotFound("The model has no snapshot yet.")
    if not _finished(job_dir):
        newest = snapshots[-1]
        return newest, f"The model is still training (or stopped early): using its newest snapshot, {newest.name}."
    for preferred in (jobfiles.BEST, jobfiles.LAST):
        if _is_snapshot(folder / preferred):
            return folder / preferred, None
    return snapshots[-1], None


def read_weights(path: Path, what: str) -> dict[str, Any]:
    """A ``torch.load(weights_only=True)`` of ``path``, refused with a clear message when it is not one."""
    try:
        return checkpoint.load(path)
    except FileNotFoundError:
        raise ModelNotFound(f"{what} does not exist (any more).") from None
    except (OSError, RuntimeError, ValueError, EOFError, pickle.UnpicklingError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InferenceError(f"{what} is not a PyTorch weights file that can be read safely: {first}") from None


def build_options(dataset_dir: Path) -> dict[str, Any]:
    """The options the model's dataset was built with."""
    return _read_json(dataset_dir / jobfiles.MANIFEST, "The model's dataset").get("options") or {}


def load_model(job_dir: Path | str, snapshot_file: str | None = None, device: torch.device | str = "cpu") -> Loaded:
    """The model of the training job in ``job_dir`` with the weights of
    ``snapshot_file`` (a name in its checkpoints folder; default: see
    ``choose_snapshot``), in eval mode on ``device``."""
    job_dir = Path(job_dir)
    config = _read_json(job_dir / jobfiles.CONFIG, "The model's job folder")
    dataset_dir = Path(config[jobfiles.DATASET_DIR_PARAM])
    options = build_options(dataset_dir)
    info = DatasetInfo.load(dataset_dir)
    height, width, channels = info.image_shape
    crop = config.get("crop") or None
    input_size = (crop, crop) if crop else (height, width)
    path, note = choose_snapshot(job_dir, snapshot_file)
    state = read_weights(path, f"The snapshot {path.name}")
    try:
        task = task_of(config)
        training = training_for(task, len(info.classes), config)
        model = training.build(config["network"], channels, len(info.classes), *input_size)
    except (NetworkError, ValueError) as exc:
        raise InferenceError(f"The model's network cannot be rebuilt: {exc}") from None
    load_exactly(model, state.get("model") if isinstance(state, dict) else None, f"The snapshot {path.name}")
    device = torch.device(device)
    try:
        normalizer = Normalizer(config["mean"], info.mean, crop, device=device)
    except ValueError as exc:
        raise InferenceError(str(exc)) from None
    return Loaded(model=model.eval().to(device), task=task, network=config["network"], classes=list(info.classes),
                  channels=channels, image_size=(height, width), input_size=input_size,
                  resize_mode=options.get("resize_mode") or DEFAULT_RESIZE_MODE, pad_to=pad_to(options),
                  normalizer=normalizer, snapshot=path.name, note=note, device=device, dataset_dir=dataset_dir)


def mean_pixels(loaded: Loaded) -> np.ndarray:
    """What preprocessing subtracts, in pixel units (0..255) as float32
    H×W×C: the mean image, the mean pixel (1×1×C) or zeros (1×1×C)."""
    normalizer = loaded.normalizer
    if normalizer.mean is None:
        return np.zeros((1, 1, loaded.channels), dtype=np.float32)
    mean = normalizer.mean.detach().cpu().numpy() * 255
    return (mean if mean.ndim == 3 else mean.reshape(1, 1, -1)).astype(np.float32)
