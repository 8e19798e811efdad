"""A trained model made once for a whole run of the suite and copied into
each test module that asks for it.

Several modules train the same small model on the same made dataset (a
detector, a Mask R-CNN, a U-Net, a LeNet) in a fixture of their own: with
the seed and one thread fixed, each training makes the same files, and one
Mask R-CNN is tens of CPU-seconds. ``made_once`` makes it in a folder shared
by every pytest process of the run (``TEST_SHARED_DIR``: the pytest-xdist
workers of a pass, and both database passes of ``make test``), the first
process to ask making it under a file lock while the others wait for it,
and gives each caller its own copy, so a test that changes what it got (a
snapshot overwritten to make it bad) spoils nobody else's."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

DONE = ".made"


def shared_folder() -> Path:
    """The run's shared folder (``tests/plugin.py`` sets it)."""
    return Path(os.environ["TEST_SHARED_DIR"])


def made_once(name: str, make: Callable[[Path], object], into: Path) -> Path:
    """``into`` holding a copy of what ``make(root)`` made in ``root`` (an
    empty folder), made the first time ``name`` is asked for in this run.
    Strings in the copy's ``config.json`` files that named the shared folder
    name the copy instead (a run's ``dataset_dir``)."""
    made = shared_folder() / name
    with open(shared_folder() / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (made / DONE).exists():
            shutil.rmtree(made, ignore_errors=True)  # what a process that died making it left
            made.mkdir(parents=True)
            make(made)
            (made / DONE).touch()
    shutil.copytree(made, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
    for config in into.rglob("config.json"):
        config.write_text(json.dumps(_renamed(json.loads(config.read_text()), str(made), str(into))))
    return into


def _renamed(value, old: str, new: str):
    if isinstance(value, str):
        return new + value[len(old):] if value == old or value.startswith(old + os.sep) else value
    if isinstance(value, dict):
        return {key: _renamed(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, old, new) for item in value]
    return value
