"""The layout of a training job's folder: every file name the trainer writes
and the web app serves or looks for, defined here once.

Names are relative to the job folder, with ``/`` between parts (they travel
in events and URLs as they are). This module imports neither torch nor
Django, so both sides use it.

::

    config.json             the job's params, written by the worker
    events.jsonl            the event log (``trainer.eventlog``)
    log.txt                 the process's output
    log-node-N.txt          the output of node N of a job over several machines (``node_log``)
    network.json            the network's layer table
    checkpoints/last.pt     the checkpoint a run resumes from
    checkpoints/best.pt     the best validation so far
    checkpoints/epoch-N.pt  a snapshot at epoch N (``snapshot_name``)
    visuals/filters-S.png   the first layer's filters at step S, each scaled on its own
    visuals/filters-S-together.png   the same, all scaled together
    profile.request         present while the web app asks for a profile
    profile/trace-S.json    a profile's trace, from step S
    export/model.pt         the trained model for download

An export job's folder (``trainer.export_job``) and a pretrained model's
(``trainer.pretrained_job``)::

    export/model.zip        the model archive (``trainer.export``)
    upload/weights          an uploaded archive or state dict, as sent
    pretrained/weights.pt   the checked weights a training job's ``pretrained`` option reads
    pretrained/info.json    their network, classes, channels and input size

A dataset job's folder (``trainer.dataset_build``). A training job gets its
``dataset/`` as the ``dataset_dir`` param, so the names inside it are
relative to that folder::

    dataset/                the built dataset (built in ``dataset.partial/``)
    dataset/manifest.json   its options, classes, counts, files and checksums
    dataset/skipped.json    every file the build skipped, and why
    dataset/mean.png        the mean image as shown
"""

from __future__ import annotations

from pathlib import Path

CONFIG = "config.json"
EVENTS = "events.jsonl"
LOG = "log.txt"
NETWORK_SUMMARY = "network.json"

CHECKPOINTS = "checkpoints"
LAST = "last.pt"
BEST = "best.pt"
LAST_CHECKPOINT = f"{CHECKPOINTS}/{LAST}"
BEST_CHECKPOINT = f"{CHECKPOINTS}/{BEST}"
SNAPSHOT_PREFIX = "epoch-"
SNAPSHOT_SUFFIX = ".pt"

VISUALS = "visuals"
PROFILE = "profile"
PROFILE_REQUEST = "profile.request"
EXPORT = "export"
EXPORTED_MODEL = f"{EXPORT}/model.pt"
MODEL_ARCHIVE = f"{EXPORT}/model.zip"

PRETRAINED_UPLOAD = "upload/weights"
PRETRAINED = "pretrained"
PRETRAINED_WEIGHTS = f"{PRETRAINED}/weights.pt"
PRETRAINED_INFO = f"{PRETRAINED}/info.json"

DATASET = "dataset"
# The training job's param that holds its dataset's folder (the dataset job's ``dataset/``).
DATASET_DIR_PARAM = "dataset_dir"
# In DATASET:
MANIFEST = "manifest.json"
SKIPPED = "skipped.json"
MEAN_IMAGE = "mean.png"

# The subfolders whose files anyone signed in may download.
SERVED_FOLDERS = (CHECKPOINTS, VISUALS, PROFILE, EXPORT)


def checkpoint(name: str) -> str:
    """``checkpoints/<name>``."""
    return f"{CHECKPOINTS}/{name}"


def snapshot_name(epoch: float) -> str:
    """The snapshot file of ``epoch``: ``epoch-3.pt`` at a whole epoch,
    ``epoch-2.50.pt`` between two."""
    number = f"{epoch:g}" if epoch == int(epoch) else f"{epoch:.2f}"
    return f"{SNAPSHOT_PREFIX}{number}{SNAPSHOT_SUFFIX}"


def snapshot_epoch(name: str) -> float | None:
    """The epoch of a snapshot file name (``snapshot_name``'s inverse); None
    for any other name."""
    if not (name.startswith(SNAPSHOT_PREFIX) and name.endswith(SNAPSHOT_SUFFIX)):
        return None
    try:
        return float(name.removeprefix(SNAPSHOT_PREFIX).removesuffix(SNAPSHOT_SUFFIX))
    except ValueError:
        return None


def snapshots(job_dir: Path) -> list[str]:
    """The snapshot files in a job folder: per epoch in order, then the best one."""
    folder = job_dir / CHECKPOINTS
    epochs = []
    for path in folder.glob(f"{SNAPSHOT_PREFIX}*{SNAPSHOT_SUFFIX}"):
        epoch = snapshot_epoch(path.name)
        if epoch is not None:
            epochs.append((epoch, path.name))
    files = [checkpoint(name) for _, name in sorted(epochs)]
    if (folder / BEST).is_file():
        files.append(BEST_CHECKPOINT)
    return files


def filters_image(step: int, together: bool = False) -> str:
    """The first layer's filters at ``step``: each scaled to its own range,
    or (``together``) all to the range of the whole layer."""
    return f"{VISUALS}/filters-{step}{'-together' if together else ''}.png"


def profile_trace(step: int) -> str:
    return f"{PROFILE}/trace-{step}.json"


def page_names() -> dict[str, str]:
    """The names a page script needs (the snapshot folder, the best snapshot)."""
    return {"checkpoints": CHECKPOINTS, "best_checkpoint": BEST_CHECKPOINT}


def node_log(rank: int) -> str:
    """The output of node ``rank`` of a job over several machines; node 0 writes ``LOG``."""
    return LOG if rank == 0 else f"log-node-{rank}.txt"
