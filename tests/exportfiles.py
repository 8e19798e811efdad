"""Model archives made by the export job's own code in the test's process,
unpacked, and their scripts run on their own beside the archive's files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from trainer import export_job
from trainer.jobfiles import MODEL_ARCHIVE


def exported(model_dir: Path, folder: Path) -> Path:
    """``folder`` as an export job of ``model_dir``'s best snapshot leaves it (run in this process)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_dir": str(model_dir), "snapshot": None}))
    assert export_job.main(str(folder / "config.json")) == 0, (folder / "events.jsonl").read_text()[-2000:]
    return folder


def unpacked(export: Path, folder: Path) -> Path:
    """The archive of the export job's folder ``export``, unpacked into ``folder``."""
    with zipfile.ZipFile(export / MODEL_ARCHIVE) as archive:
        archive.extractall(folder)
    return folder


def run_in(folder: Path, *command: str) -> list[str]:
    """The lines a Python script of an unpacked archive prints, run in ``folder`` on one thread."""
    done = subprocess.run([sys.executable, *command], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()
