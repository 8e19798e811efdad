"""What a job process's ``main`` does around its work, the same for every
kind: read ``config.json`` (the job folder is its folder), remove the
unfinished output on abort, and end with an ``error`` event and exit code 1
or a ``result`` event and 0, each also said in the job's log."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainer import eventkinds, eventlog


def job_config(config_path: str) -> tuple[Path, dict[str, Any]]:
    """The job folder and the job's config."""
    return Path(config_path).resolve().parent, json.loads(Path(config_path).read_text())


@contextmanager
def removed_on_abort(partial: Path) -> Iterator[None]:
    """While the block runs, SIGTERM (an abort) removes ``partial``, a file or
    a folder, at once and ends the process with the signal's exit code: the
    job is not coming back to finish it."""

    def stop(signum: int, frame: object) -> None:
        if partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
        else:
            partial.unlink(missing_ok=True)
        os._exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def failed(job_dir: Path, message: str) -> int:
    """Report the job's failure; its exit code."""
    eventlog.append(job_dir, eventkinds.ERROR, {"message": message})
    print(f"error: {message}", flush=True)
    return 1


def finished(job_dir: Path, result: dict[str, Any], said: str) -> int:
    """Report the job's ``result`` and say ``said`` in its log; its exit code."""
    eventlog.append(job_dir, eventkinds.RESULT, result)
    print(f"done: {said}", flush=True)
    return 0
