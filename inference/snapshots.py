"""A trained model's snapshot as export and pretrained models name it: a
file in its checkpoints folder, checked without torch."""

from __future__ import annotations

from jobs.models import Job
from trainer import jobfiles

from .trained import Unusable, snapshots


def snapshot_file(model: Job, snapshot: str) -> str:
    """The name of the snapshot ``snapshot`` gives (``epoch-5.pt`` or
    ``checkpoints/epoch-5.pt``; empty: the best one, else the newest), or
    ``Unusable`` saying why there is none."""
    if not (model.folder / jobfiles.CONFIG).is_file():
        raise Unusable("The model has not started training yet: it has no snapshot.")
    names = snapshots(model)
    if not names:
        raise Unusable("The model has no snapshot yet.")
    if not snapshot:
        return jobfiles.BEST if jobfiles.BEST in names else names[-1]
    name = snapshot.removeprefix(f"{jobfiles.CHECKPOINTS}/")
    if name not in names:
        raise Unusable(f"The model has no snapshot {snapshot!r} (any more); it has {', '.join(names)}.", "snapshot")
    return name


def stamp(model: Job, name: str) -> list[int]:
    """The snapshot file's size and modification time: ``best.pt`` is
    rewritten while a model trains, and what was made of it is then stale."""
    found = (model.folder / jobfiles.checkpoint(name)).stat()
    return [found.st_size, found.st_mtime_ns]


def stem(name: str) -> str:
    """``epoch-5`` for ``epoch-5.pt``, ``best`` for ``best.pt``."""
    return name.removesuffix(jobfiles.SNAPSHOT_SUFFIX)
