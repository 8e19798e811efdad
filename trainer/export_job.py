"""Export a model: ``python -m trainer.export_job config.json``.

Config: ``model_dir`` (the training job's folder) and ``snapshot`` (a file
name in its checkpoints; None: the best one). The model is loaded on the CPU
and written as ``export/model.zip`` in the job folder by
``trainer.export.export_archive`` (the files its task's archive holds),
which renames the finished archive into place. Emits ``progress`` events with the ``stage`` it is at, then a
``result`` (the archive's name, size and files) or an ``error``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from trainer import eventkinds, eventlog
from trainer.export import export_archive, exporter
from trainer.inference.errors import InferenceError
from trainer.inference.model import load_model
from trainer.jobfiles import MODEL_ARCHIVE
from trainer.jobmain import failed, finished, job_config, removed_on_abort


def stage(job_dir: Path, progress: float, text: str) -> None:
    print(text, flush=True)
    eventlog.append(job_dir, eventkinds.PROGRESS, {"progress": progress, "stage": text})


def export(config: dict[str, Any], job_dir: Path) -> dict[str, Any]:
    """Write the archive; what the ``result`` event says of it."""
    stage(job_dir, 0.05, "Loading the snapshot")
    loaded = load_model(config["model_dir"], config.get("snapshot") or None, "cpu")
    stage(job_dir, 0.2, "Exporting the network")
    archive = export_archive(loaded, job_dir / MODEL_ARCHIVE)
    return {"file": MODEL_ARCHIVE, "size": archive.stat().st_size, "snapshot": loaded.snapshot,
            "files": list(exporter(loaded.task).FILES), "classes": len(loaded.classes)}


def main(config_path: str) -> int:
    job_dir, config = job_config(config_path)
    partial = job_dir / f"{MODEL_ARCHIVE}.partial"
    try:
        with removed_on_abort(partial):
            result = export(config, job_dir)
    except InferenceError as exc:
        partial.unlink(missing_ok=True)
        return failed(job_dir, str(exc))
    return finished(job_dir, result, f"{result['file']}, {result['size']} bytes")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
